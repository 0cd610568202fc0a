#!/usr/bin/env python3
# A helper written from linkdevice/PROTOCOL.md alone, by an outsider: the
# test that the document suffices. Its device API is an echo service:
# GET /echo?x=1 answers 200 with the request it saw, as JSON. It links when
# the current payload is written to the file "scan" in its session dir.
import base64, datetime, hashlib, hmac, json, os, secrets, sys, threading, time

out_lock = threading.Lock()
state_lock = threading.Lock()
S = {"dir": None, "state": "idle", "qr": None, "pending": None, "hash": None, "label": "Py Device", "attempt": 0}


def send(obj):
    line = json.dumps(obj, separators=(",", ":")) + "\n"
    with out_lock:
        sys.stdout.write(line)
        sys.stdout.flush()


def log(msg):
    sys.stderr.write(msg + "\n")
    sys.stderr.flush()


class RPCError(Exception):
    def __init__(self, code, message):
        self.code, self.message = code, message


def now_plus(seconds):
    t = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=seconds)
    return t.isoformat().replace("+00:00", "Z")


def state_file():
    return os.path.join(S["dir"], "state.json")


def new_code():
    S["qr"] = {"payload": "PYHELPER:" + secrets.token_hex(12).upper(), "expiresAt": now_plus(ROTATE)}
    send({"jsonrpc": "2.0", "method": "link.qr", "params": S["qr"]})


ROTATE = float(os.environ.get("PYHELPER_ROTATE", "0.3"))


def attempt(n):
    # rotate codes and watch the scan file until linked or expired
    codes, last = 1, time.time()
    while True:
        time.sleep(0.05)
        with state_lock:
            if S["attempt"] != n or S["state"] != "qr":
                return
            path = os.path.join(S["dir"], "scan")
            if os.path.exists(path):
                with open(path) as f:
                    got = f.read(1024).strip()
                os.remove(path)
                if hmac.compare_digest(got, S["qr"]["payload"]):
                    S["pending"] = base64.urlsafe_b64encode(secrets.token_bytes(32)).rstrip(b"=").decode()
                    S["state"], S["qr"] = "linked", None
                    send({"jsonrpc": "2.0", "method": "link.status", "params": {"state": "linked", "label": S["label"]}})
                    return
            if time.time() - last >= ROTATE:
                if codes >= 3:
                    S["state"], S["qr"] = "expired", None
                    send({"jsonrpc": "2.0", "method": "link.status", "params": {"state": "expired"}})
                    return
                codes, last = codes + 1, time.time()
                new_code()


def link_state():
    st = {"state": S["state"]}
    if S["state"] == "qr":
        st["qr"] = S["qr"]
    if S["state"] == "linked":
        st["label"] = S["label"]
    return st


def check_token(params):
    tok = params.get("token") if isinstance(params, dict) else None
    if S["hash"] is None:
        raise RPCError(-32002, "not linked")
    if not isinstance(tok, str) or not hmac.compare_digest(hashlib.sha256(tok.encode()).hexdigest(), S["hash"]):
        raise RPCError(-32001, "unauthorized")


def handle(method, params):
    if method == "initialize":
        if 1 not in params.get("protocolVersions", []):
            raise RPCError(-32007, "unsupported version")
        S["dir"] = params["sessionDir"]
        if os.path.exists(state_file()):
            with open(state_file()) as f:
                saved = json.load(f)
            S["hash"], S["state"] = saved["hash"], "linked"
        return {"protocolVersion": 1, "name": "pyhelper", "version": "0.1"}
    if S["dir"] is None:
        raise RPCError(-32006, "not initialized")
    with state_lock:
        if method == "link.start":
            if S["hash"] is not None or S["pending"] is not None:
                raise RPCError(-32005, "already linked")
            S["attempt"] += 1
            S["state"] = "qr"
            new_code()
            threading.Thread(target=attempt, args=(S["attempt"],), daemon=True).start()
            return link_state()
        if method == "link.poll":
            st = link_state()
            if S["pending"] is not None:
                h = hashlib.sha256(S["pending"].encode()).hexdigest()
                tmp = state_file() + ".tmp"
                with open(tmp, "w") as f:
                    json.dump({"hash": h}, f)
                os.replace(tmp, state_file())
                S["hash"], st["token"], S["pending"] = h, S["pending"], None
            return st
        if method == "link.cancel":
            if S["state"] != "linked":
                S["attempt"] += 1
                S["state"] = "idle"
            return {}
        if method == "verify":
            check_token(params)
            return {"alive": True, "label": S["label"]}
        if method == "request":
            check_token(params)
            body = base64.b64decode(params.get("body", ""))
            echo = {"method": params["method"], "pathAndQuery": params["pathAndQuery"],
                    "headers": params.get("headers", {}), "body": body.decode("utf-8", "replace")}
            if not params["pathAndQuery"].startswith("/echo"):
                return {"status": 404, "headers": {"Content-Type": ["text/plain"]}, "body": base64.b64encode(b"not found").decode()}
            return {"status": 200, "headers": {"Content-Type": ["application/json"]},
                    "body": base64.b64encode(json.dumps(echo).encode()).decode()}
        if method == "unlink":
            S["hash"], S["pending"], S["state"] = None, None, "idle"
            S["attempt"] += 1
            if os.path.exists(state_file()):
                os.remove(state_file())
            return {}
        if method == "shutdown":
            return {}
    raise RPCError(-32601, "method not found")


def serve(msg):
    mid, method = msg.get("id"), msg.get("method")
    try:
        result = handle(method, msg.get("params") or {})
        send({"jsonrpc": "2.0", "id": mid, "result": result})
    except RPCError as e:
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": e.code, "message": e.message}})
    except Exception as e:  # never leak details into the message
        log("internal error: %r" % (e,))
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32603, "message": "internal error"}})
    if method == "shutdown":
        os._exit(0)


def main():
    log("pyhelper starting")
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            msg = json.loads(line)
        except ValueError:
            send({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "parse error"}})
            continue
        if "id" not in msg:
            continue  # a notification (cancel): nothing to stop here
        if msg.get("method") == "initialize":
            serve(msg)  # answered before anything else is read
        else:
            threading.Thread(target=serve, args=(msg,), daemon=True).start()
    os._exit(0)


main()
