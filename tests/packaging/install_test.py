#!/usr/bin/env python3
"""kprof as installed: `cmake --install BUILD --prefix TMP`, then the installed files used the way
a user would — the binary (--version, analyze on a real report), `kprof trace` finding the
installed tracer, the Python package running the kprof installed beside it, the man page, the
bash and zsh completion scripts, and the kubectl plugin through the real kubectl against the
API-server stand-in (tests/support/fake_apiserver.py).

usage: install_test.py BUILD_DIR SOURCE_DIR BUILD_TYPE InstalledTree|KubectlPlugin
Tests needing what is not installed here (kubectl >= 1.31, zsh, groff) are skipped, not passed;
exit 77 (skipped) when every test of the class was."""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

BUILD, SOURCE, BUILD_TYPE = (os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]), sys.argv[3])
SUPPORT = os.path.join(SOURCE, "tests", "support")
PREFIX = None


def setUpModule():
    global PREFIX
    PREFIX = tempfile.mkdtemp(prefix="kprof-install-")
    subprocess.run(["cmake", "--install", BUILD, "--prefix", PREFIX], check=True, stdout=subprocess.DEVNULL)


def tearDownModule():
    shutil.rmtree(PREFIX, ignore_errors=True)


def run(*args, **kwargs):
    return subprocess.run(list(args), capture_output=True, text=True, timeout=120, **kwargs)


def newest_kubectl():
    """The newest kubectl >= 1.31 on the machine (as tests/k8s/k8s_test.py finds them)."""
    found = {}
    for path in glob.glob("/usr/lib/google-cloud-sdk/bin/kubectl.1.*") + [shutil.which("kubectl") or ""]:
        if not path:
            continue
        try:
            out = run(path, "version", "--client", "-o", "json").stdout
            found.setdefault(int(re.sub(r"\D.*", "", json.loads(out)["clientVersion"]["minor"])), path)
        except Exception:
            pass
    return next((found[m] for m in sorted(found, reverse=True) if m >= 31), None)


def python_dir():
    """Where the Python package went (lib/python3.X/site-packages; dist-packages for prefix /usr)."""
    found = glob.glob(os.path.join(PREFIX, "lib", "python3*", "*-packages", "kprof", "__init__.py"))
    return os.path.dirname(os.path.dirname(found[0])) if found else None


def zsh_script():
    """Where the zsh completion went (site-functions; vendor-completions for prefix /usr)."""
    found = glob.glob(os.path.join(PREFIX, "share", "zsh", "*", "_kprof"))
    return os.path.relpath(found[0], PREFIX) if found else "share/zsh/site-functions/_kprof"


class InstalledTree(unittest.TestCase):
    def kprof(self, *args, **kwargs):
        return run(os.path.join(PREFIX, "bin", "kprof"), *args, **kwargs)

    def test_layout(self):
        for path in ["bin/kprof", "share/bash-completion/completions/kprof", zsh_script(),
                     "share/man/man1/kprof.1", "share/doc/kprof/README.md",
                     "share/doc/kprof/docs/README.md", "share/doc/kprof/docs/analyze.md"]:
            self.assertTrue(os.path.isfile(os.path.join(PREFIX, path)), path)
        self.assertEqual(os.readlink(os.path.join(PREFIX, "bin", "kubectl-kprof")), "kprof")

    def test_python_package_runs_the_kprof_installed_beside_it(self):
        packages = python_dir()
        self.assertIsNotNone(packages, "no kprof Python package under lib/python3*/")
        code = ("import kprof, sys; print(kprof.find_binary()); "
                "print(len(kprof.analyze(sys.argv[1]).df))")
        # Neither KPROF_BINARY nor a kprof on PATH: only the installed one can be found.
        env = {k: v for k, v in os.environ.items() if k != "KPROF_BINARY"}
        env.update(PYTHONPATH=packages, PATH="/nonexistent", PYTHONDONTWRITEBYTECODE="1")
        r = run(sys.executable, "-c", code,
                os.path.join(SOURCE, "data", "h200", "bottleneck_suite_full.ncu-rep.zst"), env=env)
        if r.returncode and "No module named 'pandas'" in r.stderr:
            self.skipTest("pandas not installed (Debian: python3-pandas)")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.split("\n")[:2],
                         [os.path.realpath(os.path.join(PREFIX, "bin", "kprof")), "10"])

    def test_version_names_the_commit_and_build_type(self):
        r = self.kprof("--version")
        self.assertEqual(r.returncode, 0, r.stderr)
        m = re.fullmatch(r"kprof (\d+\.\d+\.\d+) \((commit ([0-9a-f]{12})(, dirty)?|unknown commit), (.+)\)\n", r.stdout)
        self.assertIsNotNone(m, r.stdout)
        self.assertEqual(m.group(5), BUILD_TYPE)
        head = run("git", "-C", SOURCE, "rev-parse", "--short=12", "HEAD")
        if head.returncode == 0:
            self.assertEqual(m.group(3), head.stdout.strip(), "built from another commit than HEAD: rebuild")

    def test_build_info_outside_its_own_checkout_says_unknown_commit(self):
        """A tarball's tree (no .git), and one unpacked inside another repository."""
        for inside_git in (False, True):
            parent = tempfile.mkdtemp(dir=BUILD if inside_git else None)  # BUILD: usually inside the checkout
            self.addCleanup(shutil.rmtree, parent, True)
            output = os.path.join(parent, "build_info.cpp")
            r = run("cmake", f"-DSOURCE_DIR={parent}", f"-DOUTPUT={output}", "-DBUILD_TYPE=Release",
                    "-P", os.path.join(SOURCE, "cmake", "BuildInfo.cmake"))
            self.assertEqual(r.returncode, 0, r.stderr)
            text = open(output).read()
            self.assertIn('return "unknown commit";', text)
            self.assertIn('return "Release";', text)
        # In its own checkout: the commit git names.
        output = os.path.join(PREFIX, "build_info.cpp")
        run("cmake", f"-DSOURCE_DIR={SOURCE}", f"-DOUTPUT={output}", "-P", os.path.join(SOURCE, "cmake", "BuildInfo.cmake"))
        head = run("git", "-C", SOURCE, "rev-parse", "--short=12", "HEAD")
        if head.returncode == 0:
            self.assertIn(f'return "commit {head.stdout.strip()}', open(output).read())

    def test_analyze_a_real_report(self):
        r = self.kprof("analyze", os.path.join(SOURCE, "data", "h200", "bottleneck_suite_full.ncu-rep.zst"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("k_dram_stream", r.stdout)
        self.assertIn("memory-bound", r.stdout)

    def test_trace_finds_the_installed_tracer(self):
        tracer = os.path.join(PREFIX, "lib", "kprof", "libkprof_tracer.so")
        if not os.path.exists(tracer):
            # Built only where CUPTI 13 is: then not installed either, and `kprof trace` says where it looked.
            r = self.kprof("trace", "--", "true")
            self.assertEqual(r.returncode, 9, r.stderr)
            self.assertIn(tracer, r.stderr)
            self.skipTest("the tracer is not built here (no CUPTI 13)")
        r = self.kprof("doctor", "--json")
        self.assertIn(r.returncode, (0, 9), r.stderr)
        self.assertIn(tracer, r.stdout + r.stderr)

    def test_man_page_renders(self):
        page = os.path.join(PREFIX, "share", "man", "man1", "kprof.1")
        text = open(page).read()
        self.assertIn(".SS kprof k8s preflight", text)
        self.assertIn(".SS kprof analyze", text)
        if not shutil.which("groff"):
            self.skipTest("groff not installed")
        r = run("groff", "-man", "-Tutf8", "-ww", "-z", page)
        self.assertEqual((r.returncode, r.stderr), (0, ""))

    def bash_complete(self, *words):
        """COMPREPLY of _kprof for the command line WORDS (the last one being completed)."""
        script = os.path.join(PREFIX, "share", "bash-completion", "completions", "kprof")
        words_text = " ".join("'" + w + "'" for w in words)
        code = (f"source '{script}'; COMP_WORDS=({words_text}); COMP_CWORD={len(words) - 1}; _kprof; "
                "printf '%s\\n' \"${COMPREPLY[@]}\"")
        r = run("bash", "--norc", "--noprofile", "-c", code)
        self.assertEqual(r.returncode, 0, r.stderr)
        return [line for line in r.stdout.split("\n") if line]

    def test_bash_completion_loads_and_completes(self):
        script = os.path.join(PREFIX, "share", "bash-completion", "completions", "kprof")
        r = run("bash", "--norc", "--noprofile", "-c", f"source '{script}' && complete -p kprof")
        self.assertEqual((r.returncode, r.stdout.strip()), (0, "complete -o default -F _kprof kprof"), r.stderr)
        self.assertEqual(self.bash_complete("kprof", "an"), ["analyze"])
        self.assertEqual(sorted(self.bash_complete("kprof", "k8s", "")),
                         ["cleanup", "plan", "preflight", "sidecar", "sister"])
        self.assertIn("--namespace", self.bash_complete("kprof", "k8s", "preflight", "--n"))
        self.assertEqual(self.bash_complete("kprof", "analyze", "--ker"), ["--kernel"])
        # Hidden commands are not offered; a value and what follows `--` are left to bash.
        self.assertNotIn("completion", self.bash_complete("kprof", ""))
        self.assertEqual(self.bash_complete("kprof", "analyze", "--kernel", ""), [])
        self.assertEqual(self.bash_complete("kprof", "capture", "--", "--h"), [])
        self.assertEqual(self.bash_complete("kprof", "capture", "--preset", "full", "--ti"), ["--timeout"])

    def test_zsh_completion_parses_and_lists(self):
        if not shutil.which("zsh"):
            self.skipTest("zsh not installed")
        script = os.path.join(PREFIX, zsh_script())
        r = run("zsh", "-n", script)
        self.assertEqual(r.returncode, 0, r.stderr)
        # The tables and the word walk, as the completion widget calls them (compadd itself works
        # only inside a widget).
        code = (f"compdef() {{ :; }}; source '{script}'; _kprof_walk kprof k8s -n ns preflight; "
                "echo $_kprof_path; _kprof_subcommands k8s; _kprof_options 'k8s preflight'")
        r = run("zsh", "-f", "-c", code)
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.split("\n")
        self.assertEqual(lines[0], "k8s preflight")
        self.assertEqual(lines[1].split(), ["preflight", "plan", "sister", "sidecar", "cleanup"])
        self.assertIn("--context", lines[2].split())


class KubectlPlugin(unittest.TestCase):
    """`kubectl kprof VERB` runs kubectl-kprof VERB, which is `kprof k8s VERB`."""

    @classmethod
    def setUpClass(cls):
        cls.kubectl = newest_kubectl()
        if not cls.kubectl:
            raise unittest.SkipTest("no kubectl >= 1.31 installed")
        cls.dir = tempfile.mkdtemp(prefix="kprof-plugin-")
        # kubectl finds plugins on PATH: the installed bin/ first, then kubectl itself.
        kubectl_dir = os.path.join(cls.dir, "kubectl-bin")
        os.makedirs(kubectl_dir)
        os.symlink(cls.kubectl, os.path.join(kubectl_dir, "kubectl"))
        cls.env = dict(os.environ, PATH=os.pathsep.join([os.path.join(PREFIX, "bin"), kubectl_dir, "/usr/bin", "/bin"]),
                       HOME=cls.dir, KUBECONFIG=os.path.join(cls.dir, "kubeconfig"))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def kubectl_run(self, *args):
        return run(self.kubectl, *args, env=self.env)

    def test_kubectl_lists_the_plugin(self):
        r = self.kubectl_run("plugin", "list", "--name-only")
        self.assertIn("kubectl-kprof", r.stdout, r.stderr)

    def test_help_through_kubectl(self):
        r = self.kubectl_run("kprof", "--help")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("Usage: kubectl kprof", r.stdout)
        for verb in ("preflight", "sister", "sidecar", "cleanup"):
            self.assertIn(verb, r.stdout)
        r = self.kubectl_run("kprof", "preflight", "--help")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("--context", r.stdout)
        self.assertIn("--namespace", r.stdout)
        r = self.kubectl_run("kprof", "--version")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(r.stdout.startswith("kprof "), r.stdout)

    def test_preflight_through_kubectl_with_its_flags(self):
        server_dir = tempfile.mkdtemp(dir=self.dir)
        server = subprocess.Popen(
            [sys.executable, os.path.join(SUPPORT, "fake_apiserver.py"),
             os.path.join(SOURCE, "tests", "k8s", "data", "vllm_single_replica.json"), server_dir,
             "--port-file", os.path.join(server_dir, "port")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.addCleanup(server.wait)
        self.addCleanup(server.kill)
        port_file = os.path.join(server_dir, "port")
        for _ in range(200):
            if os.path.exists(port_file) and open(port_file).read():
                break
            time.sleep(0.05)
        port = open(port_file).read()
        # Two contexts: the plugin must use the one --context names, not the current one.
        with open(self.env["KUBECONFIG"], "w") as f:
            f.write(f"apiVersion: v1\nkind: Config\nclusters: [{{name: fake, cluster: {{server: \"http://127.0.0.1:{port}\"}}}},"
                    " {name: none, cluster: {server: \"http://127.0.0.1:1\"}}]\n"
                    "users: [{name: u, user: {token: t}}]\n"
                    "contexts: [{name: fake, context: {cluster: fake, user: u}}, {name: none, context: {cluster: none, user: u}}]\n"
                    "current-context: none\n")
        r = self.kubectl_run("kprof", "preflight", "llama-70b", "-n", "serving", "--context", "fake")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("pod llama-70b-6b7c9d8f5-abcde on gpu-node-3", r.stdout)
        r = self.kubectl_run("kprof", "preflight", "llama-70b", "-n", "serving")
        self.assertEqual(r.returncode, 10, r.stdout)  # the current context's server is not there


if __name__ == "__main__":
    suite = unittest.defaultTestLoader.loadTestsFromName(sys.argv[4], sys.modules[__name__])
    result = unittest.TextTestRunner(verbosity=2).run(suite)
    if not result.wasSuccessful():
        sys.exit(1)
    sys.exit(77 if result.testsRun == len(result.skipped) or not result.testsRun else 0)
