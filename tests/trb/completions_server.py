"""A real OpenAI-compatible completions server for the tests: a tiny transformers model behind ``/v1``.

It is not a mock of a library: it answers ``POST /v1/completions`` and ``GET /v1/models`` over
HTTP on loopback (stdlib ``http.server``, one thread per request), computing what a real
server computes with a real causal LM: with ``echo`` and ``logprobs`` the log-probability of
every token of the prompt (the text tokenized as a whole, the first token's None, each
token's text offset), and greedy
generation at temperature 0. For the client's failure paths it can answer the first
requests with given error statuses, delay each answer, and it records what it was sent
(Authorization headers) and how many requests were in flight at most.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class CompletionsServer:
    """``with CompletionsServer(model_dir) as srv: srv.url`` -> ``http://127.0.0.1:PORT/v1``."""

    def __init__(self, model_dir, *, name: str = "tiny", delay: float = 0.0):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.torch = torch
        self.tok = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
        self.model = AutoModelForCausalLM.from_pretrained(model_dir, local_files_only=True, dtype=torch.float32)
        self.model.eval()
        self.name = name
        self.delay = delay
        self.fail: list[tuple[int, dict]] = []  # (status, headers) for the next requests, in order
        self.always_fail: int | None = None
        self.auth: list[str | None] = []
        self.requests = 0
        self.active = 0
        self.max_active = 0
        self._lock = threading.Lock()
        self._compute = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()

    # -- what the server computes ------------------------------------------------------------

    def completion(self, body: dict) -> dict:
        torch = self.torch
        prompt = body["prompt"]
        if isinstance(prompt, list):
            (prompt,) = prompt
        enc = self.tok(prompt, add_special_tokens=False, return_offsets_mapping=True)
        ids, spans = list(enc["input_ids"]), [tuple(x) for x in enc["offset_mapping"]]
        max_tokens = int(body.get("max_tokens", 16))
        with self._compute, torch.inference_mode():
            if body.get("logprobs") is not None:  # one forward pass: the prompt's log-probabilities, one greedy token
                if not body.get("echo") or max_tokens != 1:
                    raise ValueError("this test server gives log-probabilities with echo and max_tokens=1 only")
                lp = torch.log_softmax(self.model(input_ids=torch.tensor([ids])).logits[0].float(), dim=-1)
                nxt = int(lp[-1].argmax())
                values = [None] + lp.gather(1, torch.tensor(ids[1:] + [nxt]).unsqueeze(1))[:, 0].tolist()
                # each token's character span in the text (a byte-level BPE without a post-processor: exact spans)
                offsets = [a for a, _ in spans] + [len(prompt)]
                text = prompt + self.tok.decode([nxt])
                tokens = [prompt[a:b] for a, b in spans] + [text[len(prompt):]]
                choice: dict = {"index": 0, "text": text, "finish_reason": "length",
                                "logprobs": {"tokens": tokens, "text_offset": offsets, "token_logprobs": values,
                                             "top_logprobs": None}}
            else:
                inp = torch.tensor([ids])
                out = self.model.generate(input_ids=inp, attention_mask=torch.ones_like(inp),
                                          max_new_tokens=max_tokens, do_sample=False,
                                          pad_token_id=self.tok.eos_token_id)
                choice = {"index": 0, "text": self.tok.decode(out[0, len(ids):].tolist(), skip_special_tokens=True),
                          "finish_reason": "length", "logprobs": None}
        return {"id": "cmpl-test", "object": "text_completion", "model": self.name, "choices": [choice]}

    # -- HTTP ---------------------------------------------------------------------------------

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def _send(self, status: int, payload, headers: dict | None = None):
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def _enter(self) -> tuple[int, dict] | None:
                with server._lock:
                    server.requests += 1
                    server.auth.append(self.headers.get("Authorization"))
                    if server.always_fail is not None:
                        return server.always_fail, {}
                    return server.fail.pop(0) if server.fail else None

            def do_GET(self):
                failing = self._enter()
                if failing:
                    return self._send(failing[0], {"error": "busy"}, failing[1])
                if self.path.rstrip("/") == "/v1/models":
                    return self._send(200, {"object": "list", "data": [{"id": server.name, "object": "model"}]})
                self._send(404, {"error": "not found"})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                failing = self._enter()
                if failing:  # echo what was sent, as a careless server might: the client must mask the key
                    return self._send(failing[0], {"error": f"unavailable (you sent {self.headers.get('Authorization')})"},
                                      failing[1])
                if self.path.rstrip("/") != "/v1/completions":
                    return self._send(404, {"error": "not found"})
                with server._lock:
                    server.active += 1
                    server.max_active = max(server.max_active, server.active)
                try:
                    if server.delay:
                        time.sleep(server.delay)
                    try:
                        answer, status = server.completion(body), 200
                    except Exception as e:
                        answer, status = {"error": f"{type(e).__name__}: {e}"}, 400
                finally:
                    # no longer active before the answer goes out: the client may send its next request the
                    # moment it has this one, and that must not count as one more in flight
                    with server._lock:
                        server.active -= 1
                self._send(status, answer)

        return Handler
