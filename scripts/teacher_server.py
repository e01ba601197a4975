"""A stand-in teacher for `curate quality annotate`, served over the OpenAI-compatible chat-completions protocol.

No instruction-tuned LLM can be served on the machine the selection ablation runs on (docs/selection.md), so the
teacher here is a language model of this project's own trainer, larger than the selection's reference model and
trained on the same clean English text (books and speeches, none of it a held-out set). It judges a page by how
well it predicts it: the page's bits per byte under the teacher, turned into an integer grade 0-5 by five cut
points fixed in advance on clean documents the teacher did not train on (`grades.json`, written by
scripts/selection_head.py). A grade says "this page resembles the clean books and speeches", not "this page is
educational": the grade of a model, not of a rule on the page, but not FineWeb-Edu's question. A user with a real
teacher points `curate quality annotate --endpoint` at vLLM, SGLang or Ollama instead of this.

    python scripts/teacher_server.py --model runs/ablation-selection/models/teacher \
        --grades runs/ablation-selection/models/teacher/grades.json --port 8000

The page is the text between `<page>` and `</page>` lines of the last user message (docs/prompts/resemblance.txt),
or the whole message when it has no such lines. The answer ends "Score: N", which `annotate`'s default score rule
reads; `usage` counts the teacher's tokens of the prompt and of the answer. Only POST /v1/chat/completions and
GET /v1/models are served; one page is scored at a time (the model is shared by the server's threads).
"""

from __future__ import annotations

import argparse
import bisect
import http.server
import json
import re
import threading
from pathlib import Path

PAGE = re.compile(r"<page>\n(.*)\n</page>", re.S)


class Teacher:
    """Grades a page: bits per byte under the model, then the number of cut points the page is at or below
    (bpb <= every cut: 5; above every cut: 0)."""

    def __init__(self, model: str, cuts: list[float], threads: int | None = 1):
        from curate.models import ModelSpec
        from curate.models.inference import get_model

        if len(cuts) != 5 or sorted(cuts) != list(cuts):
            raise ValueError(f"need five increasing cut points (grades 0-5), got {cuts}")
        self.cuts = list(cuts)
        self.model = get_model(ModelSpec(model, task="causal", device="cpu", threads=threads))
        self.lock = threading.Lock()

    def grade(self, bpb: float) -> int:
        return 5 - bisect.bisect_left(self.cuts, bpb)

    def answer(self, prompt: str) -> tuple[str, int, int]:
        """The message content and the prompt's and answer's token counts."""
        m = PAGE.search(prompt)
        page = m.group(1) if m else prompt
        with self.lock:
            bpb = float(self.model.bits_per_byte([page])[0]) if page.strip() else float("nan")
            prompt_tokens = len(self.model.tokens(prompt)[0])
        if bpb != bpb:  # an empty page: nothing to judge
            content = "The page is empty.\nScore: 0"
        else:
            content = f"Bits per byte under the teacher: {bpb:.4f} (cut points {self.cuts}).\nScore: {self.grade(bpb)}"
        return content, prompt_tokens, len(self.model.tokens(content)[0])


def make_server(teacher: Teacher, host: str = "127.0.0.1", port: int = 0,
                name: str = "peneira-teacher") -> http.server.ThreadingHTTPServer:
    """A server (not yet serving: call `serve_forever`) answering chat completions with the teacher's grade."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def _send(self, status: int, payload: dict) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            if self.path.rstrip("/").endswith("/v1/models"):
                self._send(200, {"object": "list", "data": [{"id": name, "object": "model", "owned_by": "peneira"}]})
            else:
                self._send(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self):
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._send(404, {"error": {"message": f"no route {self.path}"}})
                return
            try:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                prompt = [m for m in body["messages"] if m.get("role") == "user"][-1]["content"]
            except (ValueError, KeyError, IndexError, TypeError) as e:
                self._send(400, {"error": {"message": f"not a chat completion request: {e}"}})
                return
            content, p, c = teacher.answer(prompt)
            choice = {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
            self._send(200, {"id": "peneira-teacher", "object": "chat.completion", "model": body.get("model", name),
                             "choices": [choice],
                             "usage": {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}})

    server = http.server.ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    return server


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True, help="the teacher: a checkpoint of `python -m train` (ckpt.pt or its run)")
    ap.add_argument("--grades", required=True, help="grades.json: the five bits-per-byte cut points under `cuts`")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8000, help="0: a free port (printed)")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    teacher = Teacher(args.model, json.loads(Path(args.grades).read_text())["cuts"], args.threads)
    server = make_server(teacher, args.host, args.port)
    print(f"serving on http://{args.host}:{server.server_address[1]}/v1", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
