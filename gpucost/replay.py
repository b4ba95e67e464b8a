"""A serving benchmark replayed step by step on gpucost's step model: what a benchmark client that sends a list of
requests would measure — output tokens per second over the run, mean time to first token, mean time per output
token — with the engine's scheduling (:mod:`gpucost.scheduling`) and the step time of :func:`gpucost.serving_step.step_seconds`.

The clients are those of the engines' own benchmark tools:

* **closed loop** (``clients = c``): SGLang's and vLLM's ``bench_serving`` with ``--max-concurrency c`` and no
  request rate send the first ``c`` requests at once and the next one whenever one finishes (an asyncio semaphore
  around each request); TensorRT-LLM's client in dstack's benchmark is the same script.
* **offline** (``clients = None``): every request queued at time 0 (``trtllm-bench throughput``, vLLM's
  ``benchmark_throughput.py``, MLPerf's Offline scenario).

The engine, one step at a time: waiting requests are admitted first come, first served while fewer than the
scheduler's cap run and the KV cache holds their prompt and output (reserved whole on admission — TensorRT-LLM's
default ``GUARANTEED_NO_EVICT`` policy; vLLM and SGLang allocate as they go and preempt when full, which a run
whose requests fit never needs). A mixed step (:attr:`Scheduler.mixed`) decodes every running sequence and fills
the rest of the token budget with prompt tokens; otherwise a step prefills waiting prompts (up to the budget) if
there are any, else decodes. A prompt's last prefill step produces its first token; each decode step one more.
The metrics are ``bench_serving``'s: TTFT = first token − send time, TPOT = (finish − first token) /
(output − 1) for outputs longer than one token, throughput = output tokens / (last finish − first send). Nothing
is added for the HTTP server, the tokenizer or the client (no source states a figure for them)."""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from gpucost.errors import GpucostError
from gpucost.scheduling import Scheduler
from gpucost.serialize import Record

#: the steps' times [s] from arrays of (decode tokens, their mean KV length, prefill tokens, the prefill tokens' mean
#: attended length), one entry per step: :meth:`gpucost.serving_step.StepCost.seconds`
StepFn = Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray], np.ndarray]


@dataclass(frozen=True)
class Request:
    prompt: int    # tokens to prefill (after any prefix-cache hit)
    output: int    # tokens generated (the first by the prompt's last prefill step)


@dataclass(frozen=True)
class Replay(Record):
    requests: int
    output_tokens: int
    duration_s: float
    output_tokens_per_s: float
    mean_ttft_ms: float
    mean_tpot_ms: float           # NaN when no request generated more than one token
    steps: int
    peak_running: int             # most sequences in flight at once


@dataclass(frozen=True)
class Schedule:
    """What an engine runs, step by step, for a list of requests (:func:`schedule`): a step's tokens do not depend on
    how long earlier steps took (the clients wait for completions, not for a time), so one schedule prices under any
    step model. Per step: decode tokens, their mean KV length, prefill tokens and their mean attended length; per
    request: the number of steps done when it was sent, when its first token came and when it finished."""

    decode: np.ndarray
    context: np.ndarray
    prefill: np.ndarray
    prefill_context: np.ndarray
    sent: np.ndarray
    first: np.ndarray
    finish: np.ndarray
    outputs: np.ndarray
    peak_running: int

    def output_tokens_per_s(self, step: StepFn) -> float:
        """:meth:`price`'s throughput alone: the output tokens over the steps' summed time (the last step finishes
        the last request)."""
        return float(self.outputs.sum()) / float(np.sum(step(self.decode, self.context, self.prefill,
                                                             self.prefill_context)))

    def price(self, step: StepFn) -> Replay:
        """The benchmark's metrics with every step priced by ``step`` (see the module docstring)."""
        clock = np.concatenate(([0.0], np.cumsum(step(self.decode, self.context, self.prefill, self.prefill_context))))
        n = len(self.outputs)
        out = int(self.outputs.sum())
        duration = float(clock[self.finish].max())
        ttft = float((clock[self.first] - clock[self.sent]).sum()) / n
        long = self.outputs > 1
        tpot = float(((clock[self.finish[long]] - clock[self.first[long]]) / (self.outputs[long] - 1)).mean()) \
            if long.any() else float("nan")
        return Replay(n, out, duration, out / duration, ttft * 1e3, tpot * 1e3, len(self.decode), self.peak_running)


class _Engine:
    """The state of a replayed engine (see :func:`schedule`): the benchmark's queue, the admitted prompts being
    prefilled, the decoding sequences (a heap by the decode step at which they finish) and the steps done."""

    def __init__(self, requests: Sequence[Request], sched: Scheduler, clients: int | None, kv_tokens: float):
        n = len(requests)
        self.requests, self.sched, self.closed, self.kv_tokens = requests, sched, clients is not None, kv_tokens
        self.cap = sched.max_running if sched.max_running is not None else n
        self.sent, self.first, self.finish = [0] * n, [0] * n, [0] * n
        self.pending = deque(range(n))
        self.waiting: deque[int] = deque()
        self.prefilling: deque[list[int]] = deque()    # [request, prompt tokens done]
        self.decoding: list[tuple[int, int]] = []      # heap of (decode-step count at which it finishes, request)
        self.n_dec = 0
        self.ctx_sum = 0.0                             # KV length summed over the decoding sequences
        self.kv_used = 0.0
        self.clock = 0                                 # steps done
        self.decode_steps = self.peak = self.done = 0
        for _ in range(n if clients is None else min(clients, n)):
            self.send()

    def send(self) -> None:
        if self.pending:
            i = self.pending.popleft()
            self.sent[i] = self.clock
            self.waiting.append(i)

    def admit(self) -> None:
        """First come, first served, while the cap and the KV cache (the whole request reserved) allow."""
        while self.waiting and len(self.prefilling) + self.n_dec < self.cap:
            r = self.requests[self.waiting[0]]
            if self.kv_used + r.prompt + r.output > self.kv_tokens:
                break
            self.kv_used += r.prompt + r.output
            self.prefilling.append([self.waiting.popleft(), 0])
        self.peak = max(self.peak, len(self.prefilling) + self.n_dec)

    def plan(self) -> tuple[int, list[tuple[list[int], int]]]:
        """(decode tokens, prompt chunks) of the next step: a prefix of the prompts' queue, in the step's room."""
        sched = self.sched
        if sched.mixed:
            dec, room = self.n_dec, max(sched.token_budget - self.n_dec, 0)
        else:
            dec, room = (0, sched.token_budget) if self.prefilling else (self.n_dec, 0)
        chunks: list[tuple[list[int], int]] = []
        for entry in self.prefilling:
            left = self.requests[entry[0]].prompt - entry[1]
            if room <= 0:
                break
            if left <= room or sched.chunked or (not chunks and left > sched.token_budget):
                take = min(left, room)   # (a prompt longer than any step's budget is split whatever the setting)
            else:
                break                    # it waits for a step with room for it whole
            chunks.append((entry, take))
            room -= take
        return dec, chunks

    def complete(self, i: int) -> None:
        r = self.requests[i]
        self.finish[i] = self.clock
        self.kv_used -= r.prompt + r.output
        self.done += 1
        if self.closed:
            self.send()

    def advance(self, dec: int, chunks: list[tuple[list[int], int]]) -> None:
        """After a step: the decoders' tokens (and who finished), then the prompts that finished prefilling."""
        if dec:
            self.decode_steps += 1
            self.ctx_sum += self.n_dec
            while self.decoding and self.decoding[0][0] <= self.decode_steps:
                i = heapq.heappop(self.decoding)[1]
                self.n_dec -= 1
                self.ctx_sum -= self.requests[i].prompt + self.requests[i].output
                self.complete(i)
        for entry, take in chunks:   # every chunk but the last finishes its prompt
            entry[1] += take
        while self.prefilling and self.requests[self.prefilling[0][0]].prompt == self.prefilling[0][1]:
            i = self.prefilling.popleft()[0]
            self.first[i] = self.clock
            if self.requests[i].output == 1:
                self.complete(i)
            else:
                heapq.heappush(self.decoding, (self.decode_steps + self.requests[i].output - 1, i))
                self.n_dec += 1
                self.ctx_sum += self.requests[i].prompt + 1


def schedule(requests: Sequence[Request], sched: Scheduler, *, clients: int | None, kv_tokens: float,
             max_steps: int = 5_000_000) -> Schedule:
    """The steps an engine scheduled by ``sched``, whose KV cache holds ``kv_tokens`` tokens, runs for ``requests``
    (in order) sent by ``clients`` closed-loop clients, or all at once (None). See the module docstring."""
    n = len(requests)
    if n == 0:
        raise GpucostError("a benchmark of no requests")
    if any(r.prompt < 1 or r.output < 1 for r in requests):
        raise GpucostError("every request needs a prompt and at least one output token")
    need = max(r.prompt + r.output for r in requests)
    if need > kv_tokens:
        raise GpucostError(f"a request of {need} tokens does not fit a KV cache of {kv_tokens:,.0f} tokens")
    e = _Engine(requests, sched, clients, kv_tokens)
    steps: list[tuple[int, float, int, float]] = []
    while e.done < n:
        if len(steps) >= max_steps:
            raise GpucostError(f"the replay did not finish within {max_steps:,} steps")
        e.admit()
        dec, chunks = e.plan()
        pre = sum(t for _, t in chunks)
        if dec == 0 and pre == 0:
            raise GpucostError("the engine has nothing to run: the KV cache or the step budget holds no request")
        pre_ctx = sum(t * (c[1] + t / 2) for c, t in chunks) / pre if pre else 0.0
        steps.append((dec, e.ctx_sum / e.n_dec if dec else 0.0, pre, pre_ctx))
        e.clock += 1
        e.advance(dec, chunks)
    cols = np.array(steps, dtype=float).T
    return Schedule(cols[0], cols[1], cols[2], cols[3], np.array(e.sent), np.array(e.first), np.array(e.finish),
                    np.array([r.output for r in requests]), e.peak)


def replay(requests: Sequence[Request], step: StepFn, sched: Scheduler, *, clients: int | None,
           kv_tokens: float, max_steps: int = 5_000_000) -> Replay:
    """:func:`schedule`'s steps priced by ``step``: what the benchmark measures."""
    return schedule(requests, sched, clients=clients, kv_tokens=kv_tokens, max_steps=max_steps).price(step)


def bench_serving_requests(count: int, input_len: int, output_len: int, range_ratio: float = 0.0,
                           seed: int = 1) -> list[Request]:
    """The (prompt, output) lengths of ``bench_serving --dataset-name random``: one seeded stream, the input
    lengths drawn before the output lengths (``sample_random_requests``); a length of 0 is served as 1 token."""
    rng = np.random.RandomState(seed)
    ins = rng.randint(int(input_len * range_ratio), input_len + 1, size=count)
    outs = rng.randint(int(output_len * range_ratio), output_len + 1, size=count)
    return [Request(max(int(i), 1), max(int(o), 1)) for i, o in zip(ins, outs, strict=True)]


__all__ = ["Replay", "Request", "Schedule", "StepFn", "bench_serving_requests", "replay", "schedule"]
