#!/usr/bin/env python3
"""Cut the browser test's Fashion-MNIST fixture from the full data set.

Provenance: Fashion-MNIST (Han Xiao, Kashif Rasul, Roland Vollgraf; Zalando Research), MIT
licence, as the Debian package dataset-fashion-mnist installs it
(/usr/share/datasets/fashion-mnist). The fixture keeps the first 1,000 training and the first
100 test images with their labels, unchanged, as the four standard IDX files (gzip), so that the
e2e (app-ui/e2e/act1.cjs) can train and show a Fashion-MNIST model on a machine without the
package: it points the server's SHOWDOWN_FASHION_MNIST_DIR at the folder written here. The
first test image is an ankle boot (label 9).

Usage: python3 make_fashion_fixture.py [FASHION_DIR]
Output (next to this script): fashion-mnist/{train,t10k}-{images-idx3,labels-idx1}-ubyte.gz,
byte-for-byte reproducible.
"""
import gzip, os, struct, sys

HERE = os.path.dirname(os.path.abspath(__file__))
TRAIN, TEST = 1000, 100


def read(path):
    with gzip.open(path, "rb") as f:
        return f.read()


def write_idx(path, magic, dims, payload):
    header = struct.pack(">I", magic) + b"".join(struct.pack(">I", d) for d in dims)
    with open(path, "wb") as raw:
        # mtime=0 and no file name: the output is byte-for-byte reproducible.
        with gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9, mtime=0, filename="") as f:
            f.write(header + payload)


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else "/usr/share/datasets/fashion-mnist"
    out = os.path.join(HERE, "fashion-mnist")
    os.makedirs(out, exist_ok=True)
    for split, n in (("train", TRAIN), ("t10k", TEST)):
        images = read(os.path.join(src, f"{split}-images-idx3-ubyte.gz"))
        labels = read(os.path.join(src, f"{split}-labels-idx1-ubyte.gz"))
        magic, count, rows, cols = struct.unpack(">IIII", images[:16])
        assert (magic, rows, cols) == (2051, 28, 28) and count >= n, (magic, count, rows, cols)
        magic, count = struct.unpack(">II", labels[:8])
        assert magic == 2049 and count >= n, (magic, count)
        write_idx(os.path.join(out, f"{split}-images-idx3-ubyte.gz"), 2051, (n, 28, 28), images[16:16 + n * 784])
        write_idx(os.path.join(out, f"{split}-labels-idx1-ubyte.gz"), 2049, (n,), labels[8:8 + n])
    print(f"wrote {TRAIN} train and {TEST} test images to {out}")


if __name__ == "__main__":
    main()
