"""Every kernel source compiles with nvcc and the CUTLASS headers (no GPU needed; marked `nvcc`).

Builds through the normal cache: a hit means these exact inputs (source hash, flags, nvcc and CUTLASS
versions) compiled before; an edited source has a new key and is compiled here.
"""

from __future__ import annotations

import ctypes

import pytest

from ctahw import build

pytestmark = pytest.mark.nvcc


def _skip_reason() -> str | None:
    tc = build.Toolchain.detect()
    if tc.nvcc is None:
        return "nvcc not found (PATH, $CUDA_HOME/bin, /usr/local/cuda/bin)"
    if tc.cutlass_version is None:
        return "CUTLASS headers not found: pip install --no-deps nvidia-cutlass==4.2.0.0"
    return None


@pytest.mark.parametrize("name", sorted(build.LIBRARIES))
def test_kernel_source_compiles_and_exports_its_launchers(name):
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    lib = build.LIBRARIES[name]
    path = lib.build()
    cdll = lib.load()  # dlopen + every declared symbol + ABI version; needs no GPU (static cudart loads lazily)
    assert cdll._ctahw_path == str(path)
    if name == "gemm_sm90_bf16":
        buf = ctypes.create_string_buffer(512)
        cdll.ctahw_gemm_describe(buf, 512)
        text = buf.value.decode()
        assert "tile=128x256x64" in text and "cluster=2x1x1" in text and "cutlass=4.2.0" in text
        man = (path.parent / "manifest.json").read_text()
        assert "C7510" not in man  # ptxas: wgmma serialized (a slow kernel)
    if name == "gemm_sm90_bf16_epi":
        from ctahw.gemm import EPILOGUE_OPS_FUSED

        buf = ctypes.create_string_buffer(512)
        for ops, op in EPILOGUE_OPS_FUSED.items():
            rc = cdll.ctahw_gemm_epi_describe(op, buf, 512)
            if op == 0:  # the plain GEMM is gemm_sm90_bf16
                assert rc == -2002 and b"unknown epilogue op" in cdll.ctahw_gemm_epi_status_string(rc)
                continue
            text = buf.value.decode()
            assert rc > 0 and "tile=128x256x64" in text and "cluster=2x1x1" in text and f"epilogue={ops[0]}" in text
        assert cdll.ctahw_gemm_epi_describe(5, buf, 512) == -2002
        assert cdll.ctahw_gemm_epi_workspace_bytes(5, 256, 256, 256, 0, 132) == -2002
        assert "C7510" not in (path.parent / "manifest.json").read_text()
    if name == "ctapipe_sm90_bf16_chain":
        from ctahw.chain import DESC_FIELDS as CHAIN_FIELDS
        from ctahw.runner import TILE_STAMP_WORDS

        names = tuple(n for n in cdll.ctahw_chain_desc_names().decode().split(",") if n)
        assert names == CHAIN_FIELDS and cdll.ctahw_chain_desc_fields() == len(CHAIN_FIELDS)
        assert cdll.ctahw_chain_tile_stamp_words() == TILE_STAMP_WORDS
        from ctahw.chain import DESIGNS

        buf = ctypes.create_string_buffer(512)
        assert cdll.ctahw_chain_designs() == len(DESIGNS)
        for design, code in DESIGNS.items():
            assert cdll.ctahw_chain_describe(code, buf, 512) > 0
            text = buf.value.decode()
            cluster = "2x1x1" if design == "static2x1" else "1x1x1"
            kind = "tickets" if design == "tickets" else "static"
            assert f"ctapipe_chain_{kind}" in text and "tile=128x256x64" in text and f"cluster={cluster}" in text
        assert cdll.ctahw_chain_describe(len(DESIGNS), buf, 512) == -2003
        desc = (ctypes.c_longlong * len(CHAIN_FIELDS))()  # all zero: refused before any GPU work
        n = len(CHAIN_FIELDS)
        assert cdll.ctahw_chain_gemm(None, None, None, None, 256, 256, 256, desc, n, 0, 0, 0, 0, None) == -2002
        assert cdll.ctahw_chain_gemm(None, None, None, None, 256, 256, 256, desc, n - 1, 0, 0, 0, 0, None) == -2002
        assert cdll.ctahw_chain_gemm(None, None, None, None, 256, 256, 256, desc, n, 0, 9, 0, 0, None) == -2003
        # fused ops: the tickets design only, by the names variant (a) exports, then the LayerNorm fold's two
        from ctahw.chain import NORM_OPS

        assert cdll.ctahw_chain_epilogue_names() == b"none,gelu,silu,relu,residual," + "".join(
            f"{op}," for op in NORM_OPS).encode()
        # the fold's ops refuse a descriptor without their buffers (-2008) before any CUDA call
        import numpy as np

        from ctahw.chain import DESC_FIELDS as F
        ok = np.zeros(n, dtype=np.int64)
        for f, v in {"order": 1, "ticket": 1, "error": 1, "cta_tile": 1, "epoch": 1, "timeout_ns": 1, "layers": 1,
                     "tiles_m": 2, "tiles_n": 1, "num_tiles": 2, "grid": 1, "layer_stride": 1, "wait_tiles": 1,
                     "counters": 1, "signals": 1, "protocol": 1}.items():
            ok[F.index(f)] = v
        okp = ok.ctypes.data_as(ctypes.c_void_p)
        assert cdll.ctahw_chain_gemm(None, 1, 1, None, 256, 256, 256, okp, n, 0, 0, 5, 0, None) == -2008
        assert cdll.ctahw_chain_gemm(None, 1, None, None, 256, 256, 256, okp, n, 0, 0, 6, 0, None) == -2008
        for f, v in {"stats_in": 8, "stats_clear": 16, "fold_c1": 24, "fold_c2": 32, "norm_cols": 128}.items():
            ok[F.index(f)] = v  # every buffer given (never read before the check), but LayerNorm over 128 != K
        assert cdll.ctahw_chain_gemm(None, 1, None, None, 256, 256, 256, okp, n, 0, 0, 6, 0, None) == -2008
        ok[F.index("stats_clear")] = 8  # the clear buffer is the one read
        ok[F.index("norm_cols")] = 256
        assert cdll.ctahw_chain_gemm(None, 1, None, None, 256, 256, 256, okp, n, 0, 0, 6, 0, None) == -2008
        assert b"LayerNorm fold" in cdll.ctahw_chain_status_string(-2008)
        assert cdll.ctahw_chain_gemm(None, None, None, None, 256, 256, 256, desc, n, 0, 1, 1, 0, None) == -2006
        assert cdll.ctahw_chain_gemm(None, None, None, None, 256, 256, 256, desc, n, 0, 0, 9, 0, None) == -2006
        assert cdll.ctahw_chain_gemm(None, None, None, None, 256, 256, 256, desc, n, 0, 0, 1, 0, None) == -2002
        # pre-loading (lazy loading): unknown designs and ops are refused before any CUDA call
        assert cdll.ctahw_chain_load(9, 0, 0, 0) == -2003 and cdll.ctahw_chain_load(1, 1, 0, 0) == -2006
        assert cdll.ctahw_chain_load(0, 9, 0, 0) == -2006
        assert "C7510" not in (path.parent / "manifest.json").read_text()
    elif name == "probes":
        # the L2-to-SM rate probe refuses a case it cannot run before any CUDA call (-cudaErrorInvalidValue)
        ok = dict(buf=None, buf_bytes=1 << 20, own=16384, shared=32768, cluster=2, stages=4, iters=8, share=1,
                  w_bytes=0, groups=0, blocks=132, timeout=1, stamps=None, err=None, stream=None)
        for bad in (dict(cluster=3), dict(cluster=1, blocks=0), dict(blocks=131), dict(stages=0), dict(stages=9),
                    dict(own=8), dict(shared=16), dict(own=0, shared=0), dict(own=-16), dict(share=0), dict(iters=0),
                    dict(buf_bytes=16384), dict(groups=-1), dict(groups=2), dict(w_bytes=4096),
                    dict(w_bytes=32768, groups=2), dict(w_bytes=8, groups=2)):
            assert cdll.ctahw_probe_l2_rate(*{**ok, **bad}.values()) == -1, bad
        tile = dict(a=None, w=None, k_elems=512, a_div=14, w_mod=14, k_phase=0, blocks=132, stages=4, iters=8,
                    timeout=1, stamps=None, err=None, stream=None)
        for bad in (dict(a_div=0), dict(w_mod=0), dict(k_phase=-1), dict(blocks=0), dict(k_elems=0), dict(k_elems=96),
                    dict(stages=0), dict(stages=5), dict(iters=0)):
            assert cdll.ctahw_probe_l2_tile(*{**tile, **bad}.values()) == -1, bad
    elif name.startswith("ctapipe_sm90_bf16"):
        from ctahw.runner import CLUSTERS, DESC_FIELDS, LIBRARY_OF_CLUSTER, TILE_STAMP_WORDS

        assert cdll.ctahw_ctapipe_desc_fields() == len(DESC_FIELDS)
        names = tuple(n for n in cdll.ctahw_ctapipe_desc_names().decode().split(",") if n)
        assert names == DESC_FIELDS  # the library's list is ctapipe.cuh's, field by field
        assert cdll.ctahw_ctapipe_tile_stamp_words() == TILE_STAMP_WORDS
        buf = ctypes.create_string_buffer(512)
        from ctahw.runner import PERSISTENT_CLUSTERS, PERSISTENT_LIBRARY

        for shape, code in CLUSTERS.items():
            rc = cdll.ctahw_ctapipe_describe(code, buf, 512)
            if name == PERSISTENT_LIBRARY:
                from ctahw.runner import persistent_code

                if shape in PERSISTENT_CLUSTERS:
                    for design in ("smem", "ring") if shape == "1x1" else ("ring",):
                        rc = cdll.ctahw_ctapipe_describe(persistent_code(shape, design), buf, 512)
                        text = buf.value.decode()
                        assert rc > 0 and f"cluster={shape}x1" in text and f"ctapipe_persistent_{design}" in text
                else:
                    assert rc == -2003
            elif LIBRARY_OF_CLUSTER[code] == name:
                assert rc > 0 and f"cluster={shape}x1" in buf.value.decode()
            else:
                assert rc == -2003
        assert "C7510" not in (path.parent / "manifest.json").read_text()


def _ctapipe_desc(**fields) -> ctypes.Array:
    """An int64 descriptor that passes the launcher's own checks (fake pointers: a refused launch reads none)."""
    from ctahw.runner import DESC_FIELDS

    vals = dict(num_tiles=4, tiles_n=2, cta_tile=64, epoch=1, error=128, timeout_ns=10**9, order=256, in_slots=512,
                in_head=1024, in_capacity=4)
    vals.update(fields)
    return (ctypes.c_longlong * len(DESC_FIELDS))(*[vals.get(n, 0) for n in DESC_FIELDS])


def test_persistent_launcher_refuses_a_ring_too_shallow_for_k():
    """A queue-fed ring kernel needs ring_depth x ceil(K / 64) > mainloop stages (the note at kRingDepth); the launcher
    refuses a smaller K with -2005 before any CUDA call (so this runs without a GPU)."""
    import re

    from ctahw.runner import DESC_FIELDS, MODE_QUEUE, MODE_STATIC, persistent_code

    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    lib = build.LIBRARIES["ctapipe_sm90_bf16_persistent"]
    lib.build()
    cdll = lib.load()
    ring, smem = persistent_code("1x1", "ring"), persistent_code("1x1", "smem")
    buf = ctypes.create_string_buffer(512)
    assert cdll.ctahw_ctapipe_describe(ring, buf, 512) > 0
    text = buf.value.decode()
    depth = int(re.search(r"ring_depth=(\d+)", text).group(1))
    stages = int(re.search(r" stages=(\d+)", text).group(1))
    tile_k = int(re.search(r"tile=\d+x\d+x(\d+)", text).group(1))
    assert (depth, tile_k) == (2, 64) and stages >= 2
    smallest = tile_k * (stages // depth + 1)  # the smallest multiple of tile K with depth x k_tiles > stages
    for k in (0, 1, tile_k, smallest - tile_k, smallest - tile_k + 1, smallest, 8192):
        want = 0 if depth * -(-k // tile_k) > stages else -2005
        assert cdll.ctahw_ctapipe_ring_check(ring, MODE_QUEUE, k) == want, k
    assert cdll.ctahw_ctapipe_ring_check(ring, MODE_QUEUE, smallest - tile_k) == -2005
    assert cdll.ctahw_ctapipe_ring_check(ring, MODE_QUEUE, smallest) == 0
    assert cdll.ctahw_ctapipe_ring_check(ring, MODE_STATIC, tile_k) == 0  # a static order does not use the ring
    assert cdll.ctahw_ctapipe_ring_check(smem, MODE_QUEUE, tile_k) == 0  # the smem design has no ring
    assert cdll.ctahw_ctapipe_ring_check(persistent_code("2x1", "ring"), MODE_STATIC, tile_k) == 0
    # the launcher itself: refused with -2005 and its reason, nothing launched
    desc = _ctapipe_desc(mode=MODE_QUEUE)
    rc = cdll.ctahw_ctapipe_gemm(None, None, None, 512, 512, tile_k, 1.0, desc, len(DESC_FIELDS), 0, ring, 0, None)
    assert rc == -2005
    assert b"hand-off ring" in cdll.ctahw_ctapipe_status_string(rc)
    # the checks before it still come first: a bad descriptor is -2002, a queue with 2x1 clusters -2003
    assert cdll.ctahw_ctapipe_gemm(None, None, None, 512, 512, tile_k, 1.0, _ctapipe_desc(mode=MODE_QUEUE, epoch=0),
                                   len(DESC_FIELDS), 0, ring, 0, None) == -2002
    assert cdll.ctahw_ctapipe_gemm(None, None, None, 512, 512, tile_k, 1.0, desc, len(DESC_FIELDS), 0,
                                   persistent_code("2x1", "ring"), 0, None) == -2003


@pytest.mark.parametrize("name", ["ctapipe_sm90_bf16", "ctapipe_sm90_bf16_cluster"])
def test_ctapipe_epilogue_ops_are_exported_and_refused_before_any_cuda_call(name):
    """Variant (a)'s fused epilogue ops: the library's op list is ctahw.gemm's (by name), each op's kernel fits an
    H200's shared memory (the residual's C buffers beside the mainloop's stages), op 0 is the plain kernel, and the
    launcher refuses an unknown op (-2006) or a C that does not go with the op (-2007) before any CUDA call."""
    import re

    from ctahw.runner import CLUSTERS, DESC_FIELDS, EPILOGUE_NAMES, LIBRARY_OF_CLUSTER, check_epilogue_names

    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    lib = build.LIBRARIES[name]
    lib.build()
    cdll = lib.load()
    check_epilogue_names(cdll.ctahw_ctapipe_epilogue_names(), name)
    buf, plain = ctypes.create_string_buffer(512), ctypes.create_string_buffer(512)
    codes = [code for code in CLUSTERS.values() if LIBRARY_OF_CLUSTER[code] == name]
    for code in codes:
        assert cdll.ctahw_ctapipe_describe(code, plain, 512) > 0
        smem = {}
        for op, op_name in enumerate(EPILOGUE_NAMES):
            assert cdll.ctahw_ctapipe_describe_epi(op, code, buf, 512) > 0
            text = buf.value.decode()
            if op == 0:
                assert text == plain.value.decode()  # the kernel ctahw_ctapipe_gemm runs
            else:
                assert f" epilogue={op_name} " in text
            smem[op_name] = int(re.search(r"smem_bytes=(\d+)", text).group(1))
            assert smem[op_name] <= 232448, text  # an H200 CTA's opt-in maximum
        assert smem["gelu"] == smem["silu"] == smem["relu"] == smem["none"] < smem["residual"]
        assert cdll.ctahw_ctapipe_describe_epi(len(EPILOGUE_NAMES), code, buf, 512) == -2006
    assert cdll.ctahw_ctapipe_describe_epi(0, 7, buf, 512) == -2003
    msg = cdll.ctahw_ctapipe_status_string(-2006).decode()
    assert all(f"{i}={n}" in msg for i, n in enumerate(EPILOGUE_NAMES)), msg
    cl = codes[0]
    desc = _ctapipe_desc(num_tiles=4, in_capacity=4)
    c = ctypes.c_void_p(4096)  # never read: every call below is refused first

    def launch(op, c_ptr, d=desc, ndesc=len(DESC_FIELDS), cluster=cl):
        return cdll.ctahw_ctapipe_gemm_epi(op, None, None, c_ptr, None, 256, 512, 64, d, ndesc, 0, cluster, 0, None)

    assert launch(len(EPILOGUE_NAMES), None) == -2006
    assert launch(-1, None) == -2006
    assert launch(EPILOGUE_NAMES.index("residual"), None) == -2007  # the residual without C
    for op_name in ("gelu", "silu", "relu", "none"):
        assert launch(EPILOGUE_NAMES.index(op_name), c) == -2007  # C given to an op that has none
    assert launch(1, None, ndesc=len(DESC_FIELDS) - 1) == -2002
    assert launch(1, None, d=_ctapipe_desc(epoch=0)) == -2002
    assert launch(1, None, cluster=7) == -2003


def test_protocol_roles_are_checked_against_the_cutlass_kernel(tmp_path):
    """ctapipe_gemm.cuh's protocol_roles_match (the signalling thread, the epilogue threads at the signal barrier),
    which every CTA-pipelined launcher static_asserts for its kernel: true for the real cooperative kernel, false for
    a kernel with another MMA warp-group count (the compile fails with the check's message)."""
    import subprocess

    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    tc = build.Toolchain.detect()
    src = tmp_path / "roles.cu"
    src.write_text(
        '#include "ctapipe_gemm.cuh"\n'
        "using K = ctahw::ctapipe_gemm::Config<1, 1, 0>::Kernel<false>;\n"
        'static_assert(ctahw::protocol_roles_match<K>(), "the real kernel");\n'
        "struct ThreeMmaGroups { static constexpr unsigned NumLoadWarpGroups = 1, NumMmaWarpGroups = 3,"
        " MaxThreadsPerBlock = 512; };\n"
        "#ifdef BROKEN\n"
        'static_assert(ctahw::protocol_roles_match<ThreeMmaGroups>(), "three MMA warp groups");\n'
        "#endif\n")
    # --cuda runs the front end (where a static_assert fires) and stops before device code generation. One compile
    # holds both checks: the real kernel's must pass (its message absent) where the three-group one fails (present);
    # every launcher's own static_assert on its real kernel is compiled by the library builds besides.
    flags = [f for f in build.NVCC_FLAGS if f not in ("-shared", "-Xcompiler=-fPIC", "-cudart=static")] + ["--cuda"]
    inc = [f"-I{d}" for d in (*tc.cutlass_includes, build.KERNELS_DIR)]
    bad = subprocess.run([str(tc.nvcc), *flags, "-DBROKEN", *inc, str(src), "-o", str(tmp_path / "bad.ii")],
                         capture_output=True, text=True)
    assert bad.returncode != 0 and "three MMA warp groups" in bad.stderr, bad.stderr[-2000:]
    assert "the real kernel" not in bad.stderr
    assert "error" in bad.stderr and bad.stderr.count("static assertion failed") == 1, bad.stderr[-2000:]
