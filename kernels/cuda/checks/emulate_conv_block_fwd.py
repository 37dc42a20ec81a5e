#!/usr/bin/env python3
"""A CPU emulation of conv_block_fwd<F32, K, COG=8> (kernels/cuda/train.cu), statement by
statement over the same flat shared-memory arrays and index formulas, checked against a float64
numpy convolution + bias + ReLU + 2x2 max-pool: every output written, values and pool argmax
agree, float4 weight reads aligned. It proves the indexing only; the GPU tests
(compute-tests cuda::conv_blocks_match_the_cpu_backend) prove the kernel on a device.
Keep it in step with the kernel when the kernel changes.

    pip install numpy && python3 kernels/cuda/checks/emulate_conv_block_fwd.py [SEED]
"""
import numpy as np, math, sys
def kernel(x, w, b, n, cin, cout, h, wd, K, cpb, threads, COG=8):
    ho, wo = h-K+1, wd-K+1; ph, pw = ho//2, wo//2; plane = ph*pw
    out = np.full(n*cout*plane, np.nan, np.float32); mask = np.full(n*cout*plane, 255, np.int32)
    for img in range(n):
        for by in range(math.ceil(cout/cpb)):
            co0 = by*cpb
            xs_len = (cin*h*wd + 3) & ~3
            smem = np.full(xs_len + cin*K*K*cpb, np.nan, np.float32)
            xi = x[img*cin*h*wd:(img+1)*cin*h*wd]
            for e in range(cin*h*wd): smem[e] = xi[e]
            for e in range(cin*K*K*cpb):
                c = e % cpb; tap = (e//cpb) % (K*K); ci = e//(cpb*K*K); co = co0 + c
                smem[xs_len+e] = w[(co*cin+ci)*K*K+tap] if co < cout else 0.0
            groups = cpb//COG
            for t0 in range(threads):
              for t in range(t0, plane*groups, threads):
                pos = t % plane; g = t // plane; py, px = pos//pw, pos % pw
                acc = np.zeros((COG,4), np.float32)
                for ci in range(cin):
                    base = ci*h*wd + (2*py)*wd + 2*px
                    patch = np.array([[smem[base + r*wd + c] for c in range(K+1)] for r in range(K+1)], np.float32)
                    wcbase = xs_len + (ci*K*K)*cpb + g*COG   # float index; kernel uses float4 from here
                    assert wcbase % 4 == 0
                    for ky in range(K):
                        for kx in range(K):
                            for j4 in range(COG//4):
                                f4 = wcbase + 4*((ky*K+kx)*(cpb//4) + j4)
                                wv = smem[f4:f4+4]
                                for u in range(4):
                                    a = acc[4*j4+u]
                                    a[0] += wv[u]*patch[ky][kx]; a[1] += wv[u]*patch[ky][kx+1]
                                    a[2] += wv[u]*patch[ky+1][kx]; a[3] += wv[u]*patch[ky+1][kx+1]
                for j in range(COG):
                    co = co0 + g*COG + j
                    if co >= cout: break
                    best = 0; m = acc[j][0]
                    for q in range(1,4):
                        if acc[j][q] > m: m = acc[j][q]; best = q
                    v = m + b[co]; o = (img*cout+co)*plane + pos
                    out[o] = v if v > 0 else 0.0; mask[o] = best if v > 0 else 4
    return out, mask
def reference(x, w, b, n, cin, cout, h, wd, K):
    X = x.reshape(n,cin,h,wd).astype(np.float64); W = w.reshape(cout,cin,K,K).astype(np.float64)
    ho, wo = h-K+1, wd-K+1
    Z = np.zeros((n,cout,ho,wo))
    for ky in range(K):
        for kx in range(K):
            Z += np.einsum('nchw,oc->nohw', X[:,:,ky:ky+ho,kx:kx+wo], W[:,:,ky,kx])
    Z += b[None,:,None,None]
    ph, pw = ho//2, wo//2
    Zp = Z[:,:,:2*ph,:2*pw].reshape(n,cout,ph,2,pw,2).transpose(0,1,2,4,3,5).reshape(n,cout,ph,pw,4)
    best = Zp.argmax(-1); m = Zp.max(-1)
    return np.where(m>0, m, 0).ravel(), np.where(m>0, best, 4).ravel()
rng = np.random.default_rng(int(sys.argv[1]) if len(sys.argv)>1 else 0)
for (n,cin,cout,h,K,cpb,threads) in [(2,1,32,28,3,8,192),(1,32,64,13,3,16,64),(1,3,12,11,5,16,64),(1,2,8,17,7,8,32),(1,32,64,13,3,32,96)]:
    x = rng.standard_normal(n*cin*h*h).astype(np.float32); w = (rng.standard_normal(cout*cin*K*K)*0.3).astype(np.float32); b = (rng.standard_normal(cout)*0.1).astype(np.float32)
    o, m = kernel(x,w,b,n,cin,cout,h,h,K,cpb,threads); ro, rm = reference(x,w,b,n,cin,cout,h,h,K)
    assert not np.isnan(o).any(), "unwritten output"
    err = np.abs(o-ro).max()/max(1,np.abs(ro).max())
    print(f"n{n} cin{cin} cout{cout} h{h} k{K} cpb{cpb}: max rel err {err:.2e}, mask agree {np.mean(m==rm):.4f}")
    assert err < 1e-5 and np.mean(m==rm) > 0.999
print("ok")
