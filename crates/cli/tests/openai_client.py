"""Drives `ponder serve` with the official openai package, as users' scripts do.

Usage: openai_client.py BASE_URL API_KEY
"""
import sys
import threading
import time

import httpx
import openai

base, key = sys.argv[1], sys.argv[2]
client = openai.OpenAI(base_url=base, api_key=key, max_retries=0, timeout=300)
MSG = [{"role": "user", "content": "What is 7 times 6?"}]
results = {}


def check(name, cond, detail=""):
    if not cond:
        raise AssertionError(f"{name}: {detail}")
    results[name] = "ok"


# Models
models = client.models.list().data
check("models", len(models) == 1 and models[0].id, models)
model = models[0].id

# A plain completion, with the thinking apart from the answer.
r = client.chat.completions.create(model=model, messages=MSG, max_tokens=48, temperature=0, extra_body={"thinking_budget": 12})
m = r.choices[0].message
check("plain.content", m.content and m.content.strip(), r)
check("plain.reasoning", getattr(m, "reasoning_content", None), r.model_dump())
check("plain.usage", r.usage.completion_tokens > 0 and r.usage.prompt_tokens > 0, r.usage)
check("plain.finish", r.choices[0].finish_reason in ("stop", "length"), r)

# Streamed: reasoning deltas first, then content.
kinds = []
for chunk in client.chat.completions.create(model=model, messages=MSG, max_tokens=48, temperature=0, stream=True, extra_body={"thinking_budget": 12}):
    if not chunk.choices:
        continue
    d = chunk.choices[0].delta
    extra = d.model_extra or {}
    if extra.get("reasoning_content"):
        kinds.append("r")
    if d.content:
        kinds.append("c")
check("stream.both", "r" in kinds and "c" in kinds, kinds)
check("stream.order", kinds.index("c") > kinds.index("r"), kinds)

# n = 4 samples of one prompt.
r = client.chat.completions.create(model=model, messages=MSG, max_tokens=16, n=4, temperature=1.0, seed=3, extra_body={"thinking_budget": 8})
check("n4", len(r.choices) == 4 and sorted(c.index for c in r.choices) == [0, 1, 2, 3], r)

# Legacy completions.
r = client.completions.create(model=model, prompt="1, 2, 3, 4,", max_tokens=6, temperature=0)
check("completions", r.choices[0].text.strip() != "", r)

# 8 concurrent streams all complete.
done = []


def one(i):
    n = 0
    for chunk in client.chat.completions.create(model=model, messages=[{"role": "user", "content": f"Count to {i + 3}."}], max_tokens=24, stream=True, extra_body={"thinking_budget": 6}):
        n += 1
    done.append(n)


threads = [threading.Thread(target=one, args=(i,)) for i in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()
check("concurrent8", len(done) == 8 and all(n > 1 for n in done), done)

# Cancelled streams free their slots: 8 long streams abandoned after one chunk, then a short
# request must finish long before those 8 could have run 2000 tokens each.
streams = []
for i in range(8):
    s = client.chat.completions.create(model=model, messages=MSG, max_tokens=2000, stream=True, extra_body={"thinking_budget": 1900})
    next(iter(s))
    streams.append(s)
for s in streams:
    s.close()
t0 = time.time()
r = client.chat.completions.create(model=model, messages=MSG, max_tokens=8, temperature=0, timeout=120)
check("cancel.frees", time.time() - t0 < 60 and r.choices, time.time() - t0)

# Errors, OpenAI-style.
try:
    client.chat.completions.create(model=model, messages=[], max_tokens=4)
    check("err.400", False, "empty messages accepted")
except openai.BadRequestError as e:
    check("err.400", e.status_code == 400 and "messages" in str(e), e)
raw = httpx.post(f"{base}/chat/completions", content=b"{not json", headers={"authorization": f"Bearer {key}", "content-type": "application/json"})
check("err.malformed", raw.status_code == 400 and raw.json()["error"]["type"] == "invalid_request_error", raw.text)
try:
    openai.OpenAI(base_url=base, api_key="wrong", max_retries=0).models.list()
    check("err.401", False, "wrong key accepted")
except openai.AuthenticationError as e:
    check("err.401", e.status_code == 401, e)
try:
    client.chat.completions.create(model=model, messages=[{"role": "user", "content": "x" * (5 << 20)}], max_tokens=4)
    check("err.413", False, "huge body accepted")
except openai.APIStatusError as e:
    check("err.413", e.status_code == 413, e)
try:
    client.chat.completions.create(model=model, messages=MSG, max_tokens=10**6)
    check("err.context", False, "max_tokens beyond the context accepted")
except openai.BadRequestError as e:
    check("err.context", "context length" in str(e), e)
try:
    client.chat.completions.create(model="some-other-model", messages=MSG, max_tokens=4)
    check("err.404", False, "unknown model accepted")
except openai.NotFoundError as e:
    check("err.404", e.status_code == 404, e)

print(f"{len(results)} passed, 0 failed")
