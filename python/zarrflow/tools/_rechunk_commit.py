"""How ``zarrflow rechunk`` makes its output appear: whole, at once, and recoverable from a kill
at any instant.

While a rechunk runs, everything lives under ``<dest>.partial/``, which is never a Zarr node::

    <dest>.partial/
        journal/          plan (+ completion record), done-* logs, part-*.done, claims
        journal/view/     what --verify reads back (metadata plus hard links of written chunks)
        journal/copies/   arrays written through zarr-python (datetimes, strings) until the end
        store/            the output tree: chunk files only until finalisation
        old/              a replaced destination, between the two renames of --overwrite

No metadata exists under ``store/`` until every unit of every part is written, so neither
``<dest>.partial`` nor ``store/`` nor any array below opens with any Zarr reader before then.

Finalisation, by the one process that holds the claim (steps in :data:`CRASH_STEPS` order):

1. the metadata of every array and sub-group, then of the root (only now is ``store/`` a store);
2. the plan file gains a completion record: the identity (device, inode) of ``store/``;
3. the swap: ``store/`` is renamed to ``<dest>``; an existing ``<dest>`` (``--overwrite``) is
   exchanged with it in one ``renameat2(RENAME_EXCHANGE)`` where the file system supports that
   (``<dest>`` never missing), else moved to ``old/`` first;
4. ``old/``, then the journal (its ``plan`` and the claims last), then ``<dest>.partial`` are
   deleted.

Rerunning the same command resumes at whichever step was interrupted: units not in the journal
are written, a complete store is swapped in, leftovers are deleted.

Claims: the finaliser creates ``journal/finalizing.<g>`` (generation g) exclusively, recording
host, boot id, pid namespace, pid and process start time, and rewrites
``journal/finalizing.<g>.beat`` every ``lease / 8`` seconds. A claim is stale when its process is
gone on this machine (same host, boot and pid namespace), or, for a claim made elsewhere (other
Slurm nodes on a shared file system), when its beat does not change for ``lease`` seconds as
timed by the observer (no clock comparison between hosts). A stale claim is taken over by
creating generation g + 1; a finaliser that finds a newer generation stops.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import shutil
import socket
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .. import errors

# The points where ZARRFLOW_RECHUNK_CRASH_AT=<step>[:<n>] ends the process (os._exit, no cleanup)
# on the n-th time it gets there (default the first), so tests can kill a run at every boundary.
CRASH_STEPS = (
    "claimed",                  # <dest>.partial and its journal exist, nothing written yet
    "unit-written",             # a unit's chunks are written, the journal does not list it yet
    "unit-recorded",            # the journal lists the unit
    "part-done",                # this part is marked done, finalisation not started
    "finalisation-claimed",     # the claim file exists
    "arrays-metadata-written",  # metadata of every array and sub-group, not yet of the root
    "root-metadata-written",    # store/ is a complete store, not yet marked complete
    "marked-complete",          # the completion record written, nothing swapped yet
    "exchanged",                # --overwrite: store/ and <dest> exchanged (old store in store/)
    "old-aside",                # --overwrite without exchange: old <dest> moved to old/
    "renamed",                  # the new store is <dest>; leftovers not yet deleted
    "old-deleted",              # old/ (or the exchanged old store) deleted, journal not yet
)
CRASH_ENV = "ZARRFLOW_RECHUNK_CRASH_AT"
CRASH_EXIT_STATUS = 86
_crash_counts: dict[str, int] = {}
_crash_lock = threading.Lock()


def crash_point(step: str) -> None:
    """End the process here when ZARRFLOW_RECHUNK_CRASH_AT names this step (tests only)."""
    assert step in CRASH_STEPS, step
    want = os.environ.get(CRASH_ENV)
    if not want:
        return
    name, _, nth = want.partition(":")
    if name != step:
        return
    with _crash_lock:
        _crash_counts[step] = _crash_counts.get(step, 0) + 1
        if _crash_counts[step] >= int(nth or 1):
            os._exit(CRASH_EXIT_STATUS)


class RechunkError(errors.ZarrflowError, ValueError):
    """The rechunk request cannot be carried out as asked (the message says why)."""


# --------------------------------------------------------------------------------------------
# Paths and small atomic file operations
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Staging:
    dest: Path

    @property
    def root(self) -> Path:
        return self.dest.parent / (self.dest.name + ".partial")

    @property
    def journal(self) -> Path:
        return self.root / "journal"

    @property
    def store(self) -> Path:
        return self.root / "store"

    @property
    def old(self) -> Path:
        return self.root / "old"

    @property
    def view(self) -> Path:
        return self.journal / "view"

    @property
    def copies(self) -> Path:
        return self.journal / "copies"

    @property
    def plan_file(self) -> Path:
        return self.journal / "plan"


def write_atomic(path: Path, text: str) -> None:
    """Replace `path` with `text` in one rename: readers see the old or the new file, never half."""
    tmp = path.parent / f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp"
    tmp.write_text(text)
    os.replace(tmp, path)


def create_exclusive(path: Path, text: str) -> bool:
    """Create `path` holding `text` unless it exists (then False). Readers never see it empty:
    the content is written to a private file first and hard-linked into place."""
    tmp = path.parent / f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp"
    tmp.write_text(text)
    try:
        os.link(tmp, path)
        return True
    except FileExistsError:
        return False
    finally:
        tmp.unlink()


def _identity(path: Path) -> list[int]:
    st = path.stat()
    return [st.st_dev, st.st_ino]


def _is_claim_file(name: str) -> bool:
    return name.startswith("finalizing.") or name.startswith(".finalizing.")


def _is_leftover(name: str) -> bool:
    """Finalisation claims (the last files a finished rechunk deletes) and this module's private
    temporary files (left by a kill between writing and renaming one)."""
    return _is_claim_file(name) or (name.startswith(".") and name.endswith(".tmp"))


def _holds_data(path: Path) -> bool:
    return any(not _is_leftover(f) for _, _, files in os.walk(path) for f in files)


# --------------------------------------------------------------------------------------------
# Creating or joining <dest>.partial
# --------------------------------------------------------------------------------------------


def join_or_create(stage: Staging, digest: str) -> None:
    """Create ``<dest>.partial`` for this request, or join the one an earlier or parallel run of
    the same request made. A ``.partial`` that is not a rechunk in progress is never deleted or
    mixed with, unless it holds no file but leftovers (finalisation claims, temporary files: a kill
    while creating it or at the very end of the final cleanup)."""
    root = stage.root
    if root.exists() and not stage.plan_file.exists():
        time.sleep(1.0)  # another part may be between creating the folder and its plan
        if not stage.plan_file.exists():
            if _holds_data(root):
                raise RechunkError(f"rechunk: {root} exists but is not a rechunk in progress; "
                                   "remove it")
            shutil.rmtree(root, ignore_errors=True)
    stage.journal.mkdir(parents=True, exist_ok=True)
    if not create_exclusive(stage.plan_file, digest) and _plan_digest(stage) != digest:
        raise RechunkError(f"rechunk: {root} holds an interrupted run of a different request; "
                           "remove it or rerun that request")


# The plan file: the request's digest, then (once the store is complete) a line of JSON with the
# store's identity. One file, so that deleting it forgets both at once.


def _plan_digest(stage: Staging) -> str:
    return stage.plan_file.read_text().split("\n", 1)[0]


def completed(stage: Staging, digest: str) -> dict | None:
    """The completion record when ``<dest>.partial`` holds this request's finished store."""
    try:
        first, _, record = stage.plan_file.read_text().partition("\n")
    except (FileNotFoundError, NotADirectoryError):
        return None
    return json.loads(record) if first == digest and record else None


def mark_complete(stage: Staging, digest: str) -> None:
    write_atomic(stage.plan_file, digest + "\n" + json.dumps({"store": _identity(stage.store)}))


# --------------------------------------------------------------------------------------------
# Finalisation claims
# --------------------------------------------------------------------------------------------


def _read(path: str) -> str | None:
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def _start_ticks(pid: int) -> int | None:
    """The start time of process `pid` (clock ticks since boot), None when it does not exist."""
    stat = _read(f"/proc/{pid}/stat")
    if stat is None:
        return None
    fields = stat.rpartition(")")[2].split()  # after "pid (comm)": state is field 3
    return int(fields[19]) if len(fields) > 19 else None


def _me() -> dict:
    pidns = None
    try:
        pidns = os.readlink("/proc/self/ns/pid")
    except OSError:
        pass
    return {"host": socket.gethostname(), "boot": _read("/proc/sys/kernel/random/boot_id"),
            "pidns": pidns, "pid": os.getpid(), "start": _start_ticks(os.getpid()),
            "token": uuid.uuid4().hex}


def owner_alive_here(owner: dict) -> bool | None:
    """Whether the claim's process still runs, when it ran on this machine (same host, boot and
    pid namespace); None when that cannot be told from here."""
    me = _me()
    same = (owner.get("host") == me["host"] and me["boot"] is not None
            and owner.get("boot") == me["boot"] and owner.get("pidns") == me["pidns"])
    if not same or me["start"] is None:
        return None
    return _start_ticks(int(owner.get("pid", -1))) == owner.get("start")


def _generations(journal: Path) -> list[int]:
    gens = []
    for p in journal.glob("finalizing.*"):
        suffix = p.name.split(".", 1)[1]
        if suffix.isdigit():
            gens.append(int(suffix))
    return sorted(gens)


class Claim:
    """This process's right to finalise; keeps its beat going until released."""

    def __init__(self, journal: Path, gen: int, lease: float):
        self.journal, self.gen = journal, gen
        self._beat = journal / f"finalizing.{gen}.beat"
        self._stop = threading.Event()
        self._count = 0
        self._beat_once()
        self._thread = threading.Thread(target=self._run, args=(max(lease / 8, 0.01),),
                                        name="zarrflow-rechunk-claim", daemon=True)
        self._thread.start()

    def _beat_once(self) -> None:
        self._count += 1
        try:
            write_atomic(self._beat, str(self._count))
        except OSError:
            pass  # the journal is being deleted at the end of finalisation

    def _run(self, interval: float) -> None:
        while not self._stop.wait(interval):
            self._beat_once()

    def check(self) -> None:
        """Stop when another process took the claim over (this one was judged dead)."""
        newer = [g for g in _generations(self.journal) if g > self.gen]
        if newer:
            raise RechunkError(f"rechunk: finalisation of {self.journal.parent} was taken over by "
                              "another process (this one missed its lease); nothing else to do")

    def release(self) -> None:
        self._stop.set()
        self._thread.join()


def _beat_changes(journal: Path, gen: int, lease: float) -> bool:
    """Watch the beat of claim `gen` for `lease` seconds: True when it changes (the owner lives)
    or a newer claim appears."""
    beat = journal / f"finalizing.{gen}.beat"
    first = _read(str(beat))
    deadline = time.monotonic() + lease
    while time.monotonic() < deadline:
        time.sleep(min(lease / 16, 1.0))
        if _read(str(beat)) != first or any(g > gen for g in _generations(journal)):
            return True
        if not journal.exists():
            return True
    return False


def claim_finalisation(journal: Path, lease: float) -> tuple[Claim | None, str]:
    """(the claim, "") when this process may finalise; (None, why not) when a live process
    already does (or finished)."""
    while True:
        try:
            gens = _generations(journal)
            if gens:
                text = _read(str(journal / f"finalizing.{gens[-1]}"))
                if text is None:  # deleted meanwhile: finished, or taken over; look again
                    if not journal.exists():
                        return None, "finalised by another process"
                    continue
                owner = json.loads(text)
                alive = owner_alive_here(owner)
                if alive is None:
                    alive = _beat_changes(journal, gens[-1], lease)
                if alive:
                    return None, (f"finalising in another process (host {owner.get('host')}, "
                                  f"pid {owner.get('pid')})")
            gen = gens[-1] + 1 if gens else 0
            if create_exclusive(journal / f"finalizing.{gen}", json.dumps(_me())):
                crash_point("finalisation-claimed")
                return Claim(journal, gen, lease), ""
        except FileNotFoundError:
            if not journal.exists():
                return None, "finalised by another process"
            raise


# --------------------------------------------------------------------------------------------
# The swap and the cleanup
# --------------------------------------------------------------------------------------------

_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def rename_exchange(a: Path, b: Path) -> bool:
    """Exchange two paths in one step (Linux renameat2 RENAME_EXCHANGE); False where the system
    or file system cannot (then nothing changed)."""
    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV):
        return False
    raise OSError(err, os.strerror(err), str(a))


def swap_in(stage: Staging, record: dict, overwrite: bool, claim: Claim) -> None:
    """Put the complete store at ``<dest>`` (whichever swap step is left) and clean up."""
    dest = stage.dest
    ours = record["store"]
    if not (dest.exists() and _identity(dest) == ours):
        if not stage.store.exists():
            raise RechunkError(f"rechunk: {stage.root} says its store is complete but holds none, "
                              f"and {dest} is not that store; remove {stage.root} and rerun")
        claim.check()
        if dest.exists() or dest.is_symlink():
            if not overwrite:
                raise RechunkError(f"rechunk: {dest} already exists (pass --overwrite to replace "
                                  f"it); the finished result is in {stage.store}")
            if stage.old.exists():
                raise RechunkError(f"rechunk: both {dest} and a replaced store {stage.old} exist; "
                                  "remove the one you do not want and rerun")
            if rename_exchange(stage.store, dest):
                crash_point("exchanged")
            else:
                os.rename(dest, stage.old)
                crash_point("old-aside")
                os.rename(stage.store, dest)
        else:
            os.rename(stage.store, dest)
        crash_point("renamed")
    _clean_up(stage, claim)


def _clean_up(stage: Staging, claim: Claim) -> None:
    """Delete what the swap left: the old store first (while the claim still beats), then the
    part markers (so that a process claiming after a kill here cannot mistake the job for one
    whose metadata is still to write), the rest of the journal, the plan with its completion
    record, and the claims last: until then another process sees this one's claim and stays
    out."""
    for leftover in (stage.old, stage.store):  # store/ now holds the old store, if exchanged
        if leftover.exists():
            shutil.rmtree(leftover)
    crash_point("old-deleted")
    for p in stage.journal.glob("part-*.done"):
        p.unlink(missing_ok=True)
    for p in stage.journal.iterdir():
        if p.name == "plan" or _is_claim_file(p.name):
            continue
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p, ignore_errors=True)
        else:
            p.unlink(missing_ok=True)
    claim.release()  # no more beats: their files go now
    stage.plan_file.unlink(missing_ok=True)  # and with it the completion record
    shutil.rmtree(stage.root, ignore_errors=True)


def _parts_done(journal: Path, n_parts: int) -> bool:
    return len(list(journal.glob(f"part-*-of-{n_parts}.done"))) >= n_parts


def finalise(stage: Staging, digest: str, n_parts: int, overwrite: bool, lease: float,
             write_metadata: Callable[[Callable[[], None]], None]) -> tuple[bool, str]:
    """Claim, write the metadata (unless an earlier finaliser did), swap in and clean up.
    Returns (this call finalised, why not). `write_metadata` gets a callable to run between its
    steps that stops when the claim was taken over."""
    claim, why = claim_finalisation(stage.journal, lease)
    if claim is None:
        return False, why
    try:
        record = completed(stage, digest)
        if record is None and not _parts_done(stage.journal, n_parts):
            _withdraw(stage, claim)  # a finaliser got to its cleanup before this claim
            return False, "finalised by another process"
        if record is None:
            claim.check()
            write_metadata(claim.check)
            claim.check()
            mark_complete(stage, digest)
            crash_point("marked-complete")
            record = completed(stage, digest)
        swap_in(stage, record, overwrite, claim)
    finally:
        claim.release()
    return True, ""


def _withdraw(stage: Staging, claim: Claim) -> None:
    claim.release()
    for p in (stage.journal / f"finalizing.{claim.gen}.beat",
              stage.journal / f"finalizing.{claim.gen}"):
        p.unlink(missing_ok=True)
    for d in (stage.journal, stage.root):  # gone unless the other finaliser still cleans up
        try:
            d.rmdir()
        except OSError:
            pass
