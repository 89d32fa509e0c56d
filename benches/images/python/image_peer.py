"""The Python peer of the image-loading benchmark (`--bin images`).

Runs decode -> RandomResizedCrop(224, scale 0.08-1, ratio 3/4-4/3, bilinear,
antialiased) -> flip p=0.5 -> normalise -> float32 CHW, batch 256, over an
ImageFolder tree, and prints one line:

    images_per_s=<rate> peer=<torchvision|pillow-pool>

* torchvision, when `torch` and `torchvision` import: torchvision's
  ImageFolder + transforms (PIL backend) and torch's DataLoader with
  `num_workers` worker processes, `torch.set_num_threads(1)` in each,
  `persistent_workers=True`, the default collate.
* Otherwise the same PIL operations (torchvision's RandomResizedCrop
  parameters, PIL's crop + BILINEAR resize, which antialiases, the flip,
  numpy for ToTensor + Normalize, one (256, 3, 224, 224) array a batch) in a
  `multiprocessing` pool of `num_workers` processes. Each worker returns a
  checksum rather than the batch, so the peer pays no transfer: this favours
  it over a real DataLoader.

usage: image_peer.py ROOT [--workers N] [--batches K]
"""

import argparse
import math
import os
import random
import sys
import time

BATCH = 256
MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


def torchvision_rate(root, workers, batches):
    import torch
    import torchvision
    from torchvision import transforms as T

    torch.set_num_threads(1)
    transform = T.Compose([
        T.RandomResizedCrop(224, antialias=True),
        T.RandomHorizontalFlip(),
        T.ToTensor(),
        T.Normalize(MEAN, STD),
    ])
    dataset = torchvision.datasets.ImageFolder(root, transform=transform)
    loader = torch.utils.data.DataLoader(
        dataset, batch_size=BATCH, shuffle=True, num_workers=workers,
        persistent_workers=True, drop_last=True,
        worker_init_fn=lambda _: torch.set_num_threads(1))
    return timed(lambda: endless(loader), batches), "torchvision"


def endless(loader):
    while True:
        for batch in loader:
            yield batch


def timed(make, batches):
    stream = make()
    for _ in range(2):  # warm-up: workers started, files in the page cache
        next(stream)
    start = time.perf_counter()
    for _ in range(batches):
        next(stream)
    return batches * BATCH / (time.perf_counter() - start)


def rrc_params(width, height, rng):
    """torchvision's RandomResizedCrop.get_params: (left, top, w, h)."""
    area = width * height
    log_ratio = (math.log(3 / 4), math.log(4 / 3))
    for _ in range(10):
        target = area * rng.uniform(0.08, 1.0)
        aspect = math.exp(rng.uniform(*log_ratio))
        w = int(round(math.sqrt(target * aspect)))
        h = int(round(math.sqrt(target / aspect)))
        if 0 < w <= width and 0 < h <= height:
            return rng.randint(0, width - w), rng.randint(0, height - h), w, h
    return 0, 0, width, height


def pillow_batch(job):
    import numpy as np
    from PIL import Image

    paths, seed = job
    rng = random.Random(seed)
    mean = np.array(MEAN, dtype=np.float32).reshape(3, 1, 1)
    std = np.array(STD, dtype=np.float32).reshape(3, 1, 1)
    out = np.empty((len(paths), 3, 224, 224), dtype=np.float32)
    for k, path in enumerate(paths):
        with Image.open(path) as image:
            image = image.convert("RGB")
            left, top, w, h = rrc_params(image.width, image.height, rng)
            image = image.crop((left, top, left + w, top + h)).resize((224, 224), Image.BILINEAR)
            if rng.random() < 0.5:
                image = image.transpose(Image.FLIP_LEFT_RIGHT)
            x = np.asarray(image, dtype=np.float32).transpose(2, 0, 1) / 255.0
            out[k] = (x - mean) / std
    return float(out[:, :, 0, 0].sum())


def pillow_rate(root, workers, batches):
    import multiprocessing

    paths = sorted(
        os.path.join(folder, name)
        for folder, _, names in os.walk(root)
        for name in names
        if name.lower().endswith((".jpg", ".jpeg", ".png")))

    def jobs():
        step = 0
        rng = random.Random(0)
        while True:
            yield rng.sample(paths, BATCH), step
            step += 1

    pool = multiprocessing.Pool(workers)
    try:
        return timed(lambda: pool.imap(pillow_batch, jobs()), batches), "pillow-pool"
    finally:
        pool.terminate()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("root")
    parser.add_argument("--workers", type=int, default=os.cpu_count())
    parser.add_argument("--batches", type=int, default=4)
    args = parser.parse_args()
    try:
        import torch  # noqa: F401
        import torchvision  # noqa: F401
        run = torchvision_rate
    except ImportError:
        try:
            import numpy  # noqa: F401
            import PIL  # noqa: F401
            run = pillow_rate
        except ImportError:
            print("neither torch + torchvision nor pillow + numpy import: "
                  "pip install torch torchvision (or pillow numpy)")
            sys.exit(3)
    rate, peer = run(args.root, args.workers, args.batches)
    print(f"images_per_s={rate:.1f} peer={peer}")


if __name__ == "__main__":
    main()
