"""ERA5-like synthetic fields: smooth, latitude-structured, slowly moving, GRIB-quantised.

Real ERA5 float32 values come from 16-bit GRIB packing, so they carry about 16 significant bits on
top of smooth large-scale structure; that is what sets their compression ratio. These fields copy
that recipe — a climatology by latitude, a red-spectrum random field that drifts eastwards with
time, a little small-scale noise, then 16-bit packing — so that codecs see realistic data.
"""

from __future__ import annotations

import numpy as np

# name → (mean, equator-to-pole contrast, amplitude of weather, units)
VARIABLES = {
    "2m_temperature": (278.0, 40.0, 6.0, "K"),
    "temperature": (250.0, 30.0, 4.0, "K"),
    "u_component_of_wind": (5.0, -10.0, 12.0, "m s-1"),
    "v_component_of_wind": (0.0, 0.0, 9.0, "m s-1"),
    "geopotential": (54000.0, 4000.0, 900.0, "m2 s-2"),
    "specific_humidity": (0.004, 0.008, 0.002, "kg kg-1"),
    "10m_u_component_of_wind": (0.0, -6.0, 5.0, "m s-1"),
    "10m_v_component_of_wind": (0.0, 0.0, 4.0, "m s-1"),
    "mean_sea_level_pressure": (101325.0, -1500.0, 1200.0, "Pa"),
    "surface_pressure": (98000.0, -3000.0, 1500.0, "Pa"),
    "total_column_water_vapour": (20.0, 30.0, 8.0, "kg m-2"),
}
LEVELS = (500, 850)


def grid(nlat: int, nlon: int) -> tuple[np.ndarray, np.ndarray]:
    """Regular lat-lon grid as in ERA5/WeatherBench2: latitude 90→-90, longitude 0→360."""
    lat = np.linspace(90.0, -90.0, nlat)
    lon = np.linspace(0.0, 360.0, nlon, endpoint=False)
    return lat, lon


def _red_field(rng: np.random.Generator, nlat: int, nlon: int, kmax: int = 24) -> np.ndarray:
    """A smooth random field with a k^-3 spectrum (large scales dominate), unit std."""
    klat, klon = min(kmax, nlat // 2), min(kmax, nlon // 2)
    spec = np.zeros((nlat, nlon // 2 + 1), dtype=np.complex128)
    ky = np.fft.fftfreq(nlat, 1.0 / nlat)[:, None]
    kx = np.arange(nlon // 2 + 1)[None, :]
    k = np.sqrt(ky**2 + kx**2)
    mask = (np.abs(ky) <= klat) & (kx <= klon) & (k > 0)
    amp = np.where(mask, 1.0 / np.maximum(k, 1.0) ** 1.5, 0.0)
    spec += amp * (rng.standard_normal(spec.shape) + 1j * rng.standard_normal(spec.shape))
    f = np.fft.irfft2(spec, s=(nlat, nlon))
    return f / (f.std() + 1e-12)


def _grib_pack(field: np.ndarray, bits: int = 16) -> np.ndarray:
    """Quantise like GRIB simple packing: reference + n * scale, n < 2**bits."""
    lo, hi = float(field.min()), float(field.max())
    scale = (hi - lo) / (2**bits - 1) or 1.0
    return (lo + np.round((field - lo) / scale) * scale).astype(np.float32)


class FieldMaker:
    """Makes the field of one variable (and level) at successive time steps.

    Parameters
    ----------
    name : str
        A variable of :data:`VARIABLES` (``"2m_temperature"``, ``"geopotential"``...).
    nlat, nlon : int
        The grid (latitude 90 to -90, longitude 0 to 360).
    seed : int
        Seed of the random fields.
    level : int, optional
        Pressure level in hPa (scales the climatology); None for surface variables.

    Examples
    --------
    >>> maker = FieldMaker("2m_temperature", 721, 1440, seed=0)
    >>> maker.at(0).shape
    (721, 1440)
    """

    def __init__(self, name: str, nlat: int, nlon: int, seed: int, level: int | None = None):
        mean, contrast, weather, _ = VARIABLES[name]
        rng = np.random.default_rng(seed)
        lat, _ = grid(nlat, nlon)
        coslat = np.cos(np.deg2rad(lat))[:, None]
        scale = 1.0 if level is None else (level / 1000.0) ** 0.3
        # float32 keeps a 71-channel 0.25° generator near 0.6 GB.
        self.climatology = ((mean + contrast * (coslat**2 - 0.5)) * scale).astype(np.float32)
        self.weather = (weather * _red_field(rng, nlat, nlon)).astype(np.float32)
        self.slow = (0.5 * weather * _red_field(rng, nlat, nlon, kmax=6)).astype(np.float32)
        self.rng = rng
        self.noise = 0.02 * weather

    def at(self, t: int) -> np.ndarray:
        """The field at time step ``t``.

        Parameters
        ----------
        t : int
            The time step (6 hours each: the weather drifts about 2° of longitude per step).

        Returns
        -------
        numpy.ndarray
            float32, ``(nlat, nlon)``, quantised like 16-bit GRIB packing. Each call draws new
            small-scale noise.
        """
        # Weather drifts ~2° of longitude per 6-hour step; the slow mode drifts the other way.
        nlon = self.weather.shape[1]
        shift = int(round(t * nlon / 180.0))
        f = (self.climatology + np.roll(self.weather, shift, axis=1)
             + np.roll(self.slow, -shift // 3, axis=1)
             + self.noise * self.rng.standard_normal(self.weather.shape, dtype=np.float32))
        return _grib_pack(f)
