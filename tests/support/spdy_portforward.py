"""The pod side of `kubectl port-forward` for the API-server stand-in (fake_apiserver.py): the
SPDY/3.1 session kubectl opens, either over a WebSocket (kubectl >= 1.31 asks for the subprotocol
"SPDY/3.1+portforward.k8s.io" and tunnels SPDY frames in binary messages) or straight over the
upgraded HTTP connection (older kubectl, or a server that refuses the WebSocket: "Upgrade:
SPDY/3.1", "X-Stream-Protocol-Version: portforward.k8s.io").

For each local connection kubectl opens two streams with the same requestID header, an error
stream and then a data stream, each with a port header. The stand-in replies to each, connects to
where the pod's port leads (connect(port) gives a socket or raises OSError with the message a
kubelet would send) and copies bytes both ways; a failed connect sends its message on the error
stream, after which kubectl ends the whole port-forward ("lost connection to pod"), as it does
against a real cluster since 1.23.

The header blocks are zlib streams primed with SPDY/3's dictionary. The dictionary is read from
Debian's golang-github-docker-spdystream-dev (the moby/spdystream sources kubectl is built with);
spdy_dictionary() raises FileNotFoundError without it."""
import re
import socket
import struct
import threading
import zlib

DICTIONARY_SOURCE = "/usr/share/gocode/src/github.com/moby/spdystream/spdy/dictionary.go"

SYN_STREAM, SYN_REPLY, RST_STREAM, SETTINGS, PING, GOAWAY, HEADERS, WINDOW_UPDATE = 1, 2, 3, 4, 6, 7, 8, 9
FLAG_FIN = 0x01


def spdy_dictionary():
    text = open(DICTIONARY_SOURCE).read()
    body = text[text.index("headerDictionary = []byte{"):]
    body = body[:body.index("}")]
    return bytes(int(b, 16) for b in re.findall(r"0x([0-9a-fA-F]{2})", body))


def header_block(headers):
    out = struct.pack(">I", len(headers))
    for name, value in headers.items():
        n, v = name.lower().encode(), value.encode()
        out += struct.pack(">I", len(n)) + n + struct.pack(">I", len(v)) + v
    return out


def parse_header_block(data):
    (count,), at, headers = struct.unpack_from(">I", data), 4, {}
    for _ in range(count):
        (n,) = struct.unpack_from(">I", data, at)
        name = data[at + 4:at + 4 + n].decode()
        at += 4 + n
        (v,) = struct.unpack_from(">I", data, at)
        headers[name] = data[at + 4:at + 4 + v].decode()
        at += 4 + v
    return headers


class WebSocketBytes:
    """The byte stream carried in a WebSocket's binary messages (the client's are masked)."""

    def __init__(self, rfile, wfile):
        self.rfile, self.wfile, self.buffer, self.lock = rfile, wfile, b"", threading.Lock()

    def _exactly(self, n):
        data = self.rfile.read(n)
        if len(data) < n:
            raise EOFError
        return data

    def read(self, n):
        while len(self.buffer) < n:
            first, second = self._exactly(2)
            opcode, length = first & 0x0F, second & 0x7F
            if length == 126:
                (length,) = struct.unpack(">H", self._exactly(2))
            elif length == 127:
                (length,) = struct.unpack(">Q", self._exactly(8))
            mask = self._exactly(4) if second & 0x80 else b"\0\0\0\0"
            payload = bytes(b ^ mask[i % 4] for i, b in enumerate(self._exactly(length)))
            if opcode == 0x8:
                raise EOFError
            if opcode == 0x9:
                self._frame(0xA, payload)
            elif opcode in (0x0, 0x2):
                self.buffer += payload
        data, self.buffer = self.buffer[:n], self.buffer[n:]
        return data

    def _frame(self, opcode, payload):
        n = len(payload)
        header = bytes([0x80 | opcode])
        header += bytes([n]) if n < 126 else bytes([126]) + struct.pack(">H", n) if n < 65536 else \
            bytes([127]) + struct.pack(">Q", n)
        with self.lock:
            self.wfile.write(header + payload)
            self.wfile.flush()

    def write(self, data):
        self._frame(0x2, data)


class RawBytes:
    def __init__(self, rfile, wfile):
        self.rfile, self.wfile, self.lock = rfile, wfile, threading.Lock()

    def read(self, n):
        data = self.rfile.read(n)
        if len(data) < n:
            raise EOFError
        return data

    def write(self, data):
        with self.lock:
            self.wfile.write(data)
            self.wfile.flush()


class PortForwardSession:
    """One kubectl port-forward connection. connect(port) → a connected socket, or OSError whose
    text goes on the error stream; record(dict) logs what happened."""

    def __init__(self, transport, connect, record):
        self.io, self.connect, self.record = transport, connect, record
        self.dictionary = spdy_dictionary()
        self.inflate = zlib.decompressobj(zdict=self.dictionary)
        self.deflate = zlib.compressobj(zdict=self.dictionary)
        self.lock = threading.Lock()
        self.requests = {}  # requestID → {"error": id, "data": id, "port": p, "socket": s}
        self.by_stream = {}  # stream id → requestID
        self.closed = False

    # --- writing ---------------------------------------------------------------------------
    def control(self, kind, payload, flags=0):
        self.io.write(struct.pack(">HHI", 0x8000 | 3, kind, (flags << 24) | len(payload)) + payload)

    def data(self, stream, payload, fin=False):
        for start in range(0, max(len(payload), 1), 16384):
            chunk = payload[start:start + 16384]
            last = start + 16384 >= len(payload)
            self.io.write(struct.pack(">II", stream & 0x7FFFFFFF,
                                      ((FLAG_FIN if fin and last else 0) << 24) | len(chunk)) + chunk)

    def reply(self, stream):
        with self.lock:  # one compression context for the connection, in frame order
            block = self.deflate.compress(header_block({})) + self.deflate.flush(zlib.Z_SYNC_FLUSH)
            self.control(SYN_REPLY, struct.pack(">I", stream) + block)

    # --- the pod's side of one forwarded connection -----------------------------------------
    def start(self, request_id):
        entry = self.requests[request_id]
        try:
            sock = self.connect(entry["port"])
        except OSError as error:
            self.record({"port_forward": "refused", "port": entry["port"], "request": request_id,
                         "message": str(error)})
            self.data(entry["error"], str(error).encode(), fin=True)
            self.data(entry["data"], b"", fin=True)
            return
        entry["socket"] = sock
        self.record({"port_forward": "connected", "port": entry["port"], "request": request_id})

        def pump():
            try:
                while True:
                    chunk = sock.recv(65536)
                    if not chunk:
                        break
                    self.data(entry["data"], chunk)
            except OSError:
                pass
            try:
                self.data(entry["data"], b"", fin=True)
                self.data(entry["error"], b"", fin=True)
            except OSError:
                pass

        threading.Thread(target=pump, daemon=True).start()

    def run(self):
        try:
            while True:
                first, second = struct.unpack(">II", self.io.read(8))
                flags, length = second >> 24, second & 0xFFFFFF
                payload = self.io.read(length) if length else b""
                if first & 0x80000000:
                    self.on_control((first & 0xFFFF), flags, payload)
                else:
                    self.on_data(first & 0x7FFFFFFF, flags, payload)
        except (EOFError, OSError, ConnectionError):
            pass
        finally:
            for entry in self.requests.values():
                if entry.get("socket"):
                    entry["socket"].close()

    def on_control(self, kind, flags, payload):
        if kind == SYN_STREAM:
            stream = struct.unpack_from(">I", payload)[0] & 0x7FFFFFFF
            headers = parse_header_block(self.inflate.decompress(payload[10:]))
            request_id = headers.get("requestid", "")
            entry = self.requests.setdefault(request_id, {})
            entry[headers.get("streamtype", "")] = stream
            entry["port"] = int(headers.get("port", "0") or 0)
            self.by_stream[stream] = request_id
            self.reply(stream)
            if "error" in entry and "data" in entry and "started" not in entry:
                entry["started"] = True
                self.start(request_id)
        elif kind == PING:
            self.control(PING, payload)
        elif kind == RST_STREAM:
            stream = struct.unpack_from(">I", payload)[0] & 0x7FFFFFFF
            entry = self.requests.get(self.by_stream.get(stream), {})
            if entry.get("data") == stream and entry.get("socket"):
                entry["socket"].close()
        elif kind == GOAWAY:
            raise EOFError

    def on_data(self, stream, flags, payload):
        entry = self.requests.get(self.by_stream.get(stream), {})
        if entry.get("data") != stream or not entry.get("socket"):
            return
        try:
            if payload:
                entry["socket"].sendall(payload)
            if flags & FLAG_FIN:
                entry["socket"].shutdown(socket.SHUT_WR)
        except OSError:
            pass
