#!/usr/bin/env python3
"""The source-checkout loader (kvharness.stacks._checkout) and spec parameters, on synthetic module trees.

Each check writes a small checkout of a made-up stack `toystack` into a temporary folder and runs the
loader in a fresh interpreter (a loaded stack stays in its process: sys.modules, sys.meta_path), so
two commits of one kernel file are two processes, as in a bisect. CPU only, no stack installed.
"""

import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE_ROOT = os.path.dirname(HERE)  # providers/python: holds the kvharness package
sys.path.insert(0, PACKAGE_ROOT)  # the in-process tests (ContainerTest)

# The toy stack's description and stub layer, as an adapter module would write it.
PRELUDE = textwrap.dedent("""
    import sys
    from kvharness.stacks import _checkout as ck
    TOY = ck.Stack(name="toystack", package="toystack", package_dirs=("src/toystack", "toystack"),
                   stubs={"toystack.platforms": ck.stub_platform, "toystack.logger": ck.stub_logger,
                          "toystack.triton_utils": ck.stub_triton_utils,
                          "toystack.envs": ck.stub_envs({"TOY_FLAG": False, "TOY_SIZE": 16})})
""")

KERNEL_V1 = textwrap.dedent("""
    from toystack.platforms import current_platform
    from toystack.logger import init_logger
    from toystack.triton_utils import HAS_TRITON
    import toystack.envs as envs
    logger = init_logger(__name__)

    def scale_by(x):
        return x * 2 + (envs.TOY_SIZE if envs.TOY_FLAG else 0)
""")
KERNEL_V2 = KERNEL_V1.replace("x * 2", "x * 3")

# A backend module: imports half the stack, defines its kernel only under a platform test.
BACKEND = textwrap.dedent("""
    import math
    import toystack.engine.scheduler as scheduler
    from toystack.platforms import current_platform
    from toystack.model_executor import big_model

    BLOCK = 4
    UNUSED = scheduler.make()

    def _helper(x):
        return x * BLOCK + math.floor(0.5)

    if current_platform.is_rocm() or not current_platform.is_rocm():
        def launcher(x):
            return _helper(x) + 1

        def needs_model(x):
            return big_model(x)
    else:
        def launcher(x):
            raise RuntimeError("the else branch")
""")

BROKEN = textwrap.dedent("""
    from toystack.platforms import current_platform
    import toystack.distributed.parallel_state as ps

    def f():
        return 1
""")


def write_tree(root, files):
    for rel, text in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)


def python(code, **env):
    """Runs `code` after PRELUDE in a fresh interpreter: (exit code, stdout + stderr)."""
    e = dict(os.environ, PYTHONPATH=PACKAGE_ROOT, **env)
    p = subprocess.run([sys.executable, "-c", PRELUDE + textwrap.dedent(code)], capture_output=True, text=True,
                       env=e)
    return p.returncode, p.stdout + p.stderr


class LoaderTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = self.tmp.name
        # Package __init__ files that would import the whole stack: the loader must never run them.
        poison = "raise RuntimeError('__init__ of the stack ran')\n"
        write_tree(self.root, {
            "src/toystack/__init__.py": poison,
            "src/toystack/ops/__init__.py": poison,
            "src/toystack/ops/scale.py": KERNEL_V1,
            "src/toystack/ops/broken.py": BROKEN,
            "src/toystack/backends/rocm.py": BACKEND,
        })

    def tearDown(self):
        self.tmp.cleanup()

    def test_layout_and_stub_hit(self):
        rc, out = python(f"""
            co = ck.Checkout(TOY, {self.root!r})
            m = co.load("toystack.ops.scale")
            print("value", m.scale_by(5), m.__file__.endswith("src/toystack/ops/scale.py"),
                  sys.modules["toystack.platforms"].__kvharness_stub__, sys.modules["toystack.ops"].__kvharness_stub__)
        """)
        self.assertEqual(rc, 0, out)
        self.assertIn("value 10 True stub package", out)

    def test_env_stub_reads_environment(self):
        rc, out = python(f"""
            m = ck.Checkout(TOY, {self.root!r}).load("toystack.ops.scale")
            print("value", m.scale_by(5))
        """, TOY_FLAG="1", TOY_SIZE="100")
        self.assertEqual(rc, 0, out)
        self.assertIn("value 110", out)

    def test_missing_import_names_file_line_and_module(self):
        rc, out = python(f"""
            ck.Checkout(TOY, {self.root!r}).load("toystack.ops.broken")
        """)
        self.assertNotEqual(rc, 0)
        self.assertIn("ImportError: src/toystack/ops/broken.py:3 imports toystack.distributed.parallel_state, which "
                      "the kvharness source loader does not stub (stubs: toystack.envs, toystack.logger, "
                      "toystack.platforms, toystack.triton_utils); it would import the whole toystack stack", out)

    def test_allowed_module_is_real(self):
        write_tree(self.root, {"src/toystack/ops/uses_scale.py": "from toystack.ops.scale import scale_by\n"
                                                                 "from toystack.ops.sub.helpers import one\n"
                                                                 "def twice(x):\n    return scale_by(scale_by(x)) * one()\n",
                               # an allowed package's __init__ (a plugin registry) is never run
                               "src/toystack/ops/sub/__init__.py": "raise RuntimeError('sub/__init__ ran')\n",
                               "src/toystack/ops/sub/helpers.py": "def one():\n    return 1\n"})
        code = f"""
            co = ck.Checkout(TOY, {self.root!r}, allow=ALLOW)
            print("value", co.load("toystack.ops.uses_scale").twice(1))
        """
        rc, out = python("ALLOW = ('toystack.ops.',)\n" + textwrap.dedent(code))
        self.assertEqual(rc, 0, out)
        self.assertIn("value 4", out)
        rc, out = python("ALLOW = ()\n" + textwrap.dedent(code))  # not allowed: refused, naming the line
        self.assertIn("src/toystack/ops/uses_scale.py:1 imports toystack.ops.scale, which the kvharness", out)

    def test_two_commits_two_behaviours(self):
        other = tempfile.mkdtemp(dir=self.root)
        write_tree(other, {"toystack/ops/scale.py": KERNEL_V2})  # the second layout of package_dirs
        code = """
            print("value", ck.Checkout(TOY, ROOT).load("toystack.ops.scale").scale_by(5))
        """
        rc1, out1 = python(f"ROOT = {self.root!r}\n" + textwrap.dedent(code))
        rc2, out2 = python(f"ROOT = {other!r}\n" + textwrap.dedent(code))
        self.assertEqual((rc1, rc2), (0, 0), out1 + out2)
        self.assertIn("value 10", out1)
        self.assertIn("value 15", out2)

    def test_extract_from_backend_importing_the_stack(self):
        rc, out = python(f"""
            co = ck.Checkout(TOY, {self.root!r})
            m = co.extract("toystack.backends.rocm", ["launcher"])
            print("value", m.launcher(2), sorted(k for k in vars(m) if not k.startswith("__")))
            print("engine loaded:", "toystack.engine.scheduler" in sys.modules)
            import inspect
            print("source line", inspect.getsourcelines(m.launcher)[1])
        """)
        self.assertEqual(rc, 0, out)
        self.assertIn("value 9 ['BLOCK', '_helper', 'launcher', 'math']", out)  # the if-branch, not the else
        self.assertIn("engine loaded: False", out)
        self.assertIn("source line 14", out)  # the real file's line numbers

    def test_extract_reports_unstubbed_import_and_unknown_name(self):
        rc, out = python(f"""
            co = ck.Checkout(TOY, {self.root!r})
            try:
                co.extract("toystack.backends.rocm", ["no_such_kernel"])
            except LookupError as e:
                print("lookup:", e)
            co.extract("toystack.backends.rocm", ["needs_model"])
        """)
        self.assertIn("lookup: src/toystack/backends/rocm.py defines no module-level 'no_such_kernel'", out)
        self.assertIn("src/toystack/backends/rocm.py:5 imports toystack.model_executor, which the kvharness source "
                      "loader does not stub", out)

    def test_checkout_errors(self):
        rc, out = python(f"""
            for root in ({self.root + '/nope'!r}, {os.path.join(self.root, 'src/toystack')!r}):
                try:
                    ck.Checkout(TOY, root)
                except (FileNotFoundError, ValueError) as e:
                    print(type(e).__name__, e)
            co = ck.Checkout(TOY, {self.root!r})
            try:
                co.load("toystack.ops.absent")
            except ModuleNotFoundError as e:
                print("absent:", e)
        """)
        self.assertIn(f"FileNotFoundError toystack source checkout '{self.root}/nope': no such folder", out)
        self.assertIn(f"ValueError '{self.root}/src/toystack' is not a toystack source checkout: expected the "
                      f"toystack package folder at {self.root}/src/toystack/src/toystack/ or "
                      f"{self.root}/src/toystack/toystack/", out)
        self.assertIn("absent: toystack checkout", out)
        self.assertIn("none of src/toystack/ops/absent.py", out)

    def test_refuses_to_mix_with_an_installed_copy(self):
        rc, out = python(f"""
            import types
            sys.modules["toystack"] = types.ModuleType("toystack")
            sys.modules["toystack"].__file__ = "/usr/lib/python3/dist-packages/toystack/__init__.py"
            try:
                ck.Checkout(TOY, {self.root!r}).load("toystack.ops.scale")
            except ImportError as e:
                print("mix:", e)
            del sys.modules["toystack"]
            ck.Checkout(TOY, {self.root!r}).activate()
            try:
                ck.installed(TOY, "toystack.ops.scale")
            except ImportError as e:
                print("installed:", e)
        """)
        self.assertIn("mix: toystack is already imported from /usr/lib/python3/dist-packages/toystack/__init__.py "
                      "(an installed copy); a source checkout", out)
        self.assertIn(f"installed: a toystack source checkout ({self.root}) is loaded in this process", out)


class SpecTest(unittest.TestCase):
    """`python:MODULE?key=value` through the bridge's load()."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.adapter = os.path.join(self.tmp.name, "toy_adapter.py")
        write_tree(self.tmp.name, {"toy_adapter.py": textwrap.dedent("""
            import kvharness
            from kvharness import stacks
            OPTS = stacks.options(__name__, keys=("src",))

            @kvharness.writer("toy_writer", cache_format="flash")
            def w(key, value, key_cache, value_cache, slot_mapping):
                pass
            """), "plain.py": "import kvharness\n@kvharness.writer('plain_writer', cache_format='flash')\n"
                               "def w(key):\n    pass\n"})

    def tearDown(self):
        self.tmp.cleanup()

    def load(self, spec):
        rc, out = python(f"""
            from kvharness import _bridge
            h, err = _bridge.load({spec!r}, 1, 0)
            print("error:", err)
            if h:
                import toy_adapter
                print("opts:", toy_adapter.OPTS)
        """)
        self.assertEqual(rc, 0, out)
        return out

    def test_parameters_reach_the_module(self):
        self.assertIn("opts: {'src': '/a b/c+d'}", self.load(self.adapter + "?src=/a b/c+d"))

    def test_unknown_key(self):
        self.assertIn("error: import failed: ValueError: python:toy_adapter: unknown parameter 'sources' "
                      "(accepted: src)", self.load(self.adapter + "?sources=/x"))

    def test_malformed_and_unclaimed(self):
        self.assertIn("expected key=value", self.load(self.adapter + "?src"))
        plain = os.path.join(self.tmp.name, "plain.py")
        self.assertIn("error: import failed: ValueError: module plain takes no parameters (got src)",
                      self.load(plain + "?src=/x"))




# ---- the adapters end to end through `kvharness run` (needs --kvharness BIN) ----

KVHARNESS = os.environ.get("KVH_TEST_KVHARNESS")
REPO = os.path.dirname(os.path.dirname(PACKAGE_ROOT))


def kvharness_run(case_file, provider, out):
    """`kvharness run` from the repository root: (exit code, output, cases of results.json)."""
    import json
    env = dict(os.environ, PYTHONPATH=HERE)  # the fake trees' kernels use kvharness_torch (beside the bridge)
    p = subprocess.run([KVHARNESS, "run", case_file, "--provider", provider, "--report-dir", out, "--no-progress"],
                       capture_output=True, text=True, cwd=REPO, env=env)
    cases = []
    if os.path.exists(os.path.join(out, "results.json")):
        with open(os.path.join(out, "results.json")) as f:
            cases = json.load(f)["cases"]
    return p.returncode, p.stdout + p.stderr, cases


def _fp8(c):
    return "fp8" in c["id"]


@unittest.skipUnless(KVHARNESS, "set KVH_TEST_KVHARNESS (CTest passes the kvharness binary)")
class VllmAdapterTest(unittest.TestCase):
    """cases/stacks/vllm.toml over synthetic vLLM checkouts whose kernels are torch functions with vLLM's
    signatures: every call shape the adapter makes is checked by the fake (asserts), every verdict by the harness."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        sys.path.insert(0, HERE)
        import fake_stacks
        self.fake = fake_stacks

    def tearDown(self):
        self.tmp.cleanup()

    def run_commit(self, shuffle):
        root = os.path.join(self.tmp.name, shuffle)
        self.fake.write_vllm(root, shuffle=shuffle)
        rc, out, cases = kvharness_run("cases/stacks/vllm.toml", f"python:kvharness.stacks.vllm?src={root}",
                                       os.path.join(self.tmp.name, "report-" + shuffle))
        self.assertTrue(cases, out[-3000:])
        return cases

    def assert_fp8_refused_or_pass(self, cases):
        import torch
        for c in filter(_fp8, cases):
            if hasattr(torch, "float8_e4m3fn"):
                continue  # a torch with float8: the platform's variant runs, the other is UNSUPPORTED
            self.assertIn(c["verdict"], ("UNSUPPORTED", "CRASH"), c["id"])
            self.assertIn("has no float8 dtypes; vLLM's fp8 caches need them", c["detail"], c["id"])

    def test_fixed_commit_passes_every_16bit_case(self):
        cases = self.run_commit("fixed")
        bad = [(c["id"], c["verdict"], (c["detail"] or "")[:300]) for c in cases
               if not _fp8(c) and c["verdict"] != "PASS"]
        self.assertEqual(bad, [])
        names = {c.get("writer") or c.get("reader") for c in cases}
        self.assertTrue({"vllm_triton_reshape_and_cache_flash", "vllm_reshape_and_cache_shuffle_triton",
                         "vllm_unified_attention", "vllm_chunked_prefill_paged_decode"} <= names, names)
        self.assertTrue(any(c["max_query_len"] > 1 for c in cases if c.get("reader") == "vllm_unified_attention"),
                        "no ragged unified case ran")
        self.assert_fp8_refused_or_pass(cases)

    def test_contiguous_commit_fails_on_interleaved_and_padded_only(self):
        cases = [c for c in self.run_commit("contiguous")
                 if c.get("writer") == "vllm_reshape_and_cache_shuffle_triton" and c["kind"] == "write"
                 and not _fp8(c)]
        self.assertTrue(cases)
        for c in cases:
            layout_bad = "/interleaved/" in c["id"] or "/padded/" in c["id"]
            want = "FAIL" if layout_bad else "PASS"
            self.assertEqual(c["verdict"], want, (c["id"], c["detail"]))

    def test_head_interleaved_has_no_container(self):
        root = os.path.join(self.tmp.name, "hi")
        self.fake.write_vllm(root)
        case = os.path.join(self.tmp.name, "hi.toml")
        with open(case, "w") as f:
            f.write('seeds = [1]\n[[write]]\nmodels = ["Llama-3.1-8B"]\ntp = 2\nlayouts = ["head_interleaved"]\n'
                    'num_tokens = [8]\nblock_sizes = [16]\ndtypes = ["fp16"]\n'
                    'writers = ["vllm_reshape_and_cache_shuffle_triton"]\n')
        rc, out, cases = kvharness_run(case, f"python:kvharness.stacks.vllm?src={root}",
                                       os.path.join(self.tmp.name, "report-hi"))
        self.assertTrue(cases, out[-2000:])
        for c in cases:
            self.assertIn(c["verdict"], ("UNSUPPORTED", "CRASH"), c["id"])
            self.assertIn("vLLM's shuffle writer takes the allocation-shaped cache", c["detail"])
            self.assertIn("is not dense inside a block", c["detail"])

    def test_installed_package(self):
        """python:kvharness.stacks.vllm without ?src= imports the installed vllm (here a fake on PYTHONPATH); the
        shuffle writer is extracted from the installed backend file, whose other imports are never made."""
        root = os.path.join(self.tmp.name, "site")
        self.fake.write_vllm(root, installed=True)
        env_path = os.environ.get("PYTHONPATH")
        os.environ["PYTHONPATH"] = root
        try:
            import json
            out_dir = os.path.join(self.tmp.name, "report-installed")
            p = subprocess.run([KVHARNESS, "run", "cases/stacks/vllm.toml", "--provider", "python:kvharness.stacks.vllm",
                                "--filter", "kv_cache_dtype=fp16|bf16", "--report-dir", out_dir, "--no-progress"],
                               capture_output=True, text=True, cwd=REPO)
        finally:
            if env_path is None:
                del os.environ["PYTHONPATH"]
            else:
                os.environ["PYTHONPATH"] = env_path
        self.assertEqual(p.returncode, 0, (p.stdout + p.stderr)[-3000:])
        with open(os.path.join(out_dir, "results.json")) as f:
            cases = json.load(f)["cases"]
        self.assertTrue(any(c.get("writer") == "vllm_reshape_and_cache_shuffle_triton" for c in cases))
        self.assertEqual([c["id"] for c in cases if c["verdict"] != "PASS"], [])
        # No vllm installed and no ?src=: the run stops at load (exit 125), not a green run of UNSUPPORTED.
        for stack in ("vllm", "sglang"):
            p = subprocess.run([KVHARNESS, "run", f"cases/stacks/{stack}.toml", "--provider", f"python:kvharness.stacks.{stack}",
                                "--report-dir", os.path.join(self.tmp.name, f"report-none-{stack}"), "--no-progress"],
                               capture_output=True, text=True, cwd=REPO)
            self.assertEqual(p.returncode, 125, (p.stdout + p.stderr)[-2000:])
            self.assertIn(f"{stack} is not installed for", p.stderr)
            self.assertIn(f"python:kvharness.stacks.{stack}?src=PATH", p.stderr)

    def test_a_stack_kernel_that_raises_is_named_without_triton(self):
        """A checkout's kernel raising, Triton absent (the stub's placeholder module stands for triton): the
        CRASH names the exception and the stack's line, not an error of the bridge's frame search."""
        root = os.path.join(self.tmp.name, "raising")
        self.fake.write_vllm(root)
        path = os.path.join(root, "vllm/v1/attention/ops/triton_unified_attention.py")
        with open(path) as f:
            text = f.read()
        with open(path, "w") as f:
            f.write(text.replace("def unified_attention(", "def unified_attention(*a, **k):\n"
                                 "    raise IndexError('planted in the stack')  # STACK RAISES\n\n\n"
                                 "def _unused(", 1))
        case = os.path.join(self.tmp.name, "r.toml")
        with open(case, "w") as f:
            f.write('seeds = [1]\n[[attention]]\nmodels = ["Llama-3.1-8B"]\ntp = 2\nlayouts = ["kv_first"]\n'
                    'batch_sizes = [2]\ncontext_lens = [5, 20]\nblock_sizes = [16]\ndtypes = ["fp16"]\n'
                    'readers = ["vllm_unified_attention"]\n')
        rc, out, cases = kvharness_run(case, f"python:kvharness.stacks.vllm?src={root}",
                                       os.path.join(self.tmp.name, "report-raising"))
        self.assertEqual(rc, 1, out[-3000:])
        detail = cases[0]["detail"]
        self.assertEqual(cases[0]["verdict"], "CRASH", detail)
        self.assertIn("IndexError: planted in the stack", detail)
        self.assertIn("triton_unified_attention.py:", detail)
        self.assertNotIn("kvharness bridge", detail)

    def test_missing_kernel_file_and_bad_src(self):
        root = os.path.join(self.tmp.name, "partial")
        self.fake.write_vllm(root)
        os.remove(os.path.join(root, "vllm/v1/attention/ops/triton_unified_attention.py"))
        case = os.path.join(self.tmp.name, "u.toml")
        with open(case, "w") as f:
            f.write('seeds = [1]\n[[attention]]\nmodels = ["Llama-3.1-8B"]\ntp = 2\nlayouts = ["kv_first"]\n'
                    'batch_sizes = [2]\ncontext_lens = [5, 20]\nblock_sizes = [16]\ndtypes = ["fp16"]\n'
                    'readers = ["vllm_unified_attention", "vllm_chunked_prefill_paged_decode"]\n')
        rc, out, cases = kvharness_run(case, f"python:kvharness.stacks.vllm?src={root}",
                                       os.path.join(self.tmp.name, "report-partial"))
        by = {c["reader"]: c for c in cases}
        self.assertEqual(len(by), 2, out[-3000:])
        self.assertEqual(by["vllm_chunked_prefill_paged_decode"]["verdict"], "PASS")
        self.assertIn("has no unified_attention: none of vllm/v1/attention/ops/triton_unified_attention.py, "
                      "vllm/attention/ops/triton_unified_attention.py", by["vllm_unified_attention"]["detail"])
        rc, out, cases = kvharness_run(case, f"python:kvharness.stacks.vllm?src={self.tmp.name}/nowhere",
                                       os.path.join(self.tmp.name, "report-nowhere"))
        self.assertEqual(rc, 125, out)
        self.assertIn("vllm source checkout", out)
        self.assertIn("no such folder", out)
        rc, out, cases = kvharness_run(case, f"python:kvharness.stacks.vllm?src={self.tmp.name}",
                                       os.path.join(self.tmp.name, "report-notvllm"))
        self.assertEqual(rc, 125, out)
        self.assertIn("is not a vllm source checkout: expected the vllm package folder at", out)
        rc, out, cases = kvharness_run(case, f"python:kvharness.stacks.vllm?source={root}",
                                       os.path.join(self.tmp.name, "report-key"))
        self.assertEqual(rc, 125, out)
        self.assertIn("unknown parameter 'source' (accepted: src)", out)


@unittest.skipUnless(KVHARNESS, "set KVH_TEST_KVHARNESS (CTest passes the kvharness binary)")
class SglangAdapterTest(unittest.TestCase):
    """cases/stacks/sglang.toml over a synthetic SGLang checkout (python/sglang/...) whose decode_attention_fwd
    is a torch function with SGLang's signature reading the token pool through kv_indptr/kv_indices."""

    def test_case_file(self):
        sys.path.insert(0, HERE)
        import fake_stacks
        with tempfile.TemporaryDirectory() as tmp:
            fake_stacks.write_sglang(os.path.join(tmp, "sglang"))
            rc, out, cases = kvharness_run("cases/stacks/sglang.toml",
                                           f"python:kvharness.stacks.sglang?src={tmp}/sglang",
                                           os.path.join(tmp, "report"))
        self.assertTrue(cases, out[-3000:])
        for c in cases:
            if c["layout"] == "interleaved":  # no token-pool view: refused, naming why
                self.assertIn(c["verdict"], ("UNSUPPORTED", "CRASH"), c["id"])
                self.assertIn("SGLang's token pool needs pages contiguous in tokens", c["detail"])
            else:
                self.assertEqual(c["verdict"], "PASS", (c["id"], c["detail"]))
        self.assertTrue(any(c["sinks"] for c in cases) and any(c["softcap"] for c in cases))


class ContainerTest(unittest.TestCase):
    """kvharness/_containers.py on shuffle views shaped as the harness makes them (cases/layout.cpp): the
    container aliases exactly the view's elements, as vLLM's launcher reinterprets it with view_as."""

    def views(self, nb=5, nkv=2, hs=32, bs=16, x=8, block_stride=None, offset=0, head_stride=None):
        import torch
        page = nkv * hs * bs
        block_stride = block_stride or page
        storage = torch.zeros(offset + nb * block_stride + page, dtype=torch.float16)
        hstride = head_stride or hs * bs
        k = storage.as_strided((nb, nkv, hs // x, bs, x), (block_stride, hstride, bs * x, x, 1), offset)
        v = storage.as_strided((nb, nkv, bs // x, hs, x), (block_stride, hstride, hs * x, x, 1), offset)
        return storage, k, v

    def check_alias(self, k, which):
        import torch
        from kvharness import _containers
        c = _containers.allocation_container(k, "shuffle", which)
        self.assertIsNotNone(c, _containers.container_problem(k, "shuffle"))
        nb, bs, nkv, hs = c.shape
        self.assertEqual((nb, nkv), (k.shape[0], k.shape[1]))
        five = c.view_as(torch.empty(k.shape, device="meta"))  # what vLLM's launcher does
        five.copy_(torch.arange(k.numel(), dtype=torch.float32).reshape(k.shape).half())
        self.assertTrue(torch.equal(k, five))  # the same elements, through the container

    def test_layouts_with_a_container(self):
        for name, kw in {"separate/kv_first": {}, "interleaved": {"block_stride": 2 * 2 * 32 * 16},
                         "padded": {"block_stride": 2 * 2 * 32 * 16 + 96}, "offset": {"offset": 40},
                         "interleaved+offset": {"block_stride": 4096, "offset": 2048}}.items():
            with self.subTest(layout=name):
                _, k, v = self.views(**kw)
                self.check_alias(k, "key")
                self.check_alias(v, "value")

    def test_degenerate_size_one_strides(self):
        import torch
        from kvharness import _containers
        storage = torch.zeros(1 * 32 * 16 + 64, dtype=torch.float16)
        k = storage.as_strided((1, 1, 4, 16, 8), (1 << 31, 1 << 31, 128, 8, 1))  # one block, one kv head
        self.assertIsNone(_containers.container_problem(k, "shuffle"))
        self.check_alias(k, "key")

    def test_head_interleaved_and_other_formats_have_none(self):
        from kvharness import _containers
        _, k, _ = self.views(head_stride=2 * 32 * 16)  # heads of K and V alternate: not dense in a block
        self.assertIsNone(_containers.allocation_container(k, "shuffle", "key"))
        self.assertIn("is not dense inside a block (dim 1 stride 1024, dense 512)",
                      _containers.container_problem(k, "shuffle"))
        self.assertIn("the flash format has no allocation-shaped container",
                      _containers.container_problem(k, "flash"))


if __name__ == "__main__":
    unittest.main()
