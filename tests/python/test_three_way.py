"""The CLI, the Python package and the MCP server give one answer: on the same inputs (the cases of
test_cli_agreement), `kprof VERB --json` run directly, the package's `.json` and the
structuredContent of `kprof mcp`'s tool of that verb are the same document, the command line in
it aside (each front end passes its own). The MCP server is driven here over stdio with JSON-RPC
written by hand, not through the package or the TypeScript SDK (tests/mcp does that)."""
import json
import subprocess

import pytest

from conftest import SOURCE
from test_cli_agreement import CASES, without_argv


class McpSession:
    """`kprof mcp --root DATA` over stdio: one JSON-RPC message per line each way."""

    def __init__(self, binary):
        self.process = subprocess.Popen([binary, "mcp", "--root", str(SOURCE / "data")],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True)
        self.next_id = 0
        init = self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                           "clientInfo": {"name": "three-way", "version": "1"}})
        assert "protocolVersion" in init, init
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message):
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()

    def request(self, method, params):
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        while True:
            line = self.process.stdout.readline()
            assert line, f"kprof mcp closed its output: {self.process.stderr.read()}"
            reply = json.loads(line)
            if reply.get("id") == self.next_id:
                assert "error" not in reply, reply
                return reply["result"]

    def call(self, tool, arguments):
        result = self.request("tools/call", {"name": tool, "arguments": arguments})
        assert not result.get("isError"), result["content"]
        return result["structuredContent"]

    def close(self):
        self.process.stdin.close()
        self.process.wait(timeout=30)


@pytest.fixture(scope="module")
def mcp(kprof_binary):
    session = McpSession(kprof_binary)
    yield session
    session.close()


def mcp_arguments(verb, args, options):
    """The MCP tool call of the package call verb(*args, **options)."""
    paths = [str(a) for a in args]
    name = verb.__name__
    if name == "analyze":
        arguments = {"reports": paths}
    elif name in ("rank", "budget"):
        arguments = {"traces": paths}
    elif name == "report":
        arguments = {"trace": paths[0], "reports": paths[1:]}
    elif name == "diff":
        arguments = {"baseline": paths[0], "candidate": paths[1]}
    else:
        raise AssertionError(f"no MCP tool for {name}")
    arguments.update(options)
    return name, arguments


@pytest.mark.parametrize("verb, args, options, cli_args", CASES)
def test_cli_python_and_mcp_agree(verb, args, options, cli_args, cli_json, mcp):
    printed = without_argv(cli_json(*cli_args))
    from_python = without_argv(verb(*args, **options).json)
    tool, arguments = mcp_arguments(verb, args, options)
    from_mcp = without_argv(mcp.call(tool, arguments))
    assert from_python == printed
    assert from_mcp == printed
