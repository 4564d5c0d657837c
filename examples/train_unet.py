"""Train a U-Net (ResNet-18 encoder) to forecast ERA5-like fields one time step ahead.

    zarrflow synth era5.zarr
    python examples/train_unet.py --store era5.zarr                          # one GPU, or the CPU
    torchrun --nproc-per-node 2 examples/train_unet.py --store era5.zarr     # DDP, a GPU per rank

zarrflow.Loader reads, decodes, normalises and casts every batch by itself (on the GPU when
there is one) and gives each DDP rank its share of the samples, so the loop only trains.
benchmarks/train_bench.py times this model on real data against synthetic batches.
"""

import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
import torchvision

import zarrflow


class Up(nn.Module):
    """Upsample to the skip's size, concatenate it, two 3x3 conv-BN-ReLU."""

    def __init__(self, cin: int, cskip: int, cout: int):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv2d(cin + cskip, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout),
            nn.ReLU(inplace=True), nn.Conv2d(cout, cout, 3, padding=1, bias=False),
            nn.BatchNorm2d(cout), nn.ReLU(inplace=True))

    def forward(self, x, skip=None):
        if skip is None:
            return self.conv(F.interpolate(x, scale_factor=2, mode="bilinear"))
        x = F.interpolate(x, size=skip.shape[-2:], mode="bilinear")
        return self.conv(torch.cat([x, skip], dim=1))


class UNetResNet18(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        r = torchvision.models.resnet18(weights=None)
        r.conv1 = nn.Conv2d(channels, 64, 7, stride=2, padding=3, bias=False)
        self.stem, self.pool = nn.Sequential(r.conv1, r.bn1, r.relu), r.maxpool
        self.enc = nn.ModuleList([r.layer1, r.layer2, r.layer3, r.layer4])
        self.dec = nn.ModuleList([Up(512, 256, 256), Up(256, 128, 128), Up(128, 64, 64),
                                  Up(64, 64, 64), Up(64, 0, 32)])
        self.head = nn.Conv2d(32, channels, 1)

    def forward(self, x):
        h, w = x.shape[-2:]
        x = F.pad(x, (0, -w % 32, 0, -h % 32), mode="replicate")  # the encoder halves 5 times
        skips = [self.stem(x)]
        y = self.pool(skips[0])
        for layer in self.enc:
            y = layer(y)
            skips.append(y)
        y = skips.pop()
        for up in self.dec:
            y = up(y, skips.pop() if skips else None)
        return self.head(y)[..., :h, :w]


def loss_fn(pred, target):
    pred, target = pred.float(), target.float()
    return torch.sqrt(F.mse_loss(pred, target)) + 0.1 * (pred.std() - target.std()).abs()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--store", default="era5.zarr", help="Zarr group, local path or URL")
    ap.add_argument("--channels", help="comma list (default: every channel of 'data')")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=16, help="per rank")
    ap.add_argument("--checkpoint", help="save model, optimiser and loader position here")
    args = ap.parse_args()

    cuda = torch.cuda.is_available()
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0))) if cuda else "cpu"
    if cuda:
        torch.cuda.set_device(device)
    distributed = "RANK" in os.environ  # started by torchrun
    if distributed:  # the loaders take their rank and world size from the process group
        dist.init_process_group("nccl" if cuda else "gloo")

    data = zarrflow.open(args.store)["data"]
    channels = (args.channels.split(",") if args.channels
                else [f"data@{label}" for label in data.attrs["channels"]])
    ntime = data.shape[data.dims.index("time")]
    split = ntime - max(2, ntime // 10)  # the last tenth of the time axis validates
    stats = zarrflow.compute_stats(args.store, channels, every=max(1, ntime // 16))
    options = dict(batch_size=args.batch_size, normalize=stats, drop_last=False,
                   dtype="bfloat16" if cuda else "float32", device=str(device), output="torch")
    train = zarrflow.Loader(args.store, channels, time_range=(0, split), shuffle="block", **options)
    val = zarrflow.Loader(args.store, channels, time_range=(split, ntime), shuffle=False,
                          prime_next_epoch=False, **options)

    model = UNetResNet18(len(channels)).to(device, memory_format=torch.channels_last)
    if distributed:
        model = nn.parallel.DistributedDataParallel(model, device_ids=[device] if cuda else None)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    autocast = dict(device_type="cuda" if cuda else "cpu", dtype=torch.bfloat16, enabled=cuda)

    for epoch in range(args.epochs):
        train.set_epoch(epoch)  # every rank: the same shuffle, disjoint shares
        model.train()
        for batch in train:
            with torch.autocast(**autocast):
                loss = loss_fn(model(batch["x"]), batch["y"])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        model.eval()
        with torch.no_grad(), torch.autocast(**autocast):
            val_loss = torch.stack([loss_fn(model(b["x"]), b["y"]) for b in val]).mean()
        if distributed:
            dist.all_reduce(val_loss)  # every rank has the same number of batches
            val_loss /= dist.get_world_size()
        if not distributed or dist.get_rank() == 0:
            print(f"epoch {epoch}: train loss {loss.item():.4f}, validation loss "
                  f"{val_loss.item():.4f}", flush=True)
            if args.checkpoint:  # resume with train.load_state_dict(saved["loader"])
                torch.save({"model": model.state_dict(), "opt": opt.state_dict(),
                            "loader": train.state_dict()}, args.checkpoint)
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
