"""Ctrl-C and SIGTERM at random moments never leave a truncated file, and exit with 130/143 and
one line. CI runs 10 trials per command; SCHEDOPT_KILL_TRIALS=100 runs the long campaign."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

TRIALS = int(os.environ.get("SCHEDOPT_KILL_TRIALS", "10"))


def default_ctrl_c() -> None:
    """`preexec_fn` of a child a test interrupts: SIGINT's default action in it. A shell starts
    a background job with SIGINT ignored and its children inherit that, where Python then
    never raises KeyboardInterrupt, so a test run started in the background would fail."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def big_instance(path: Path, jobs: int, arrivals: bool) -> None:
    rng = np.random.default_rng(0)
    rates = rng.random((jobs, 3)) * [10.0, 5.0, 2.0] + 0.1
    doc = {"format": "schedopt-instance/1",
           "cluster": {"gpu_types": {t: {"count": max(8, jobs // 8), "gpus_per_node": 8}
                                     for t in ("v100", "p100", "k80")}},
           "jobs": [{"id": f"j{i}", "throughput": dict(zip(("v100", "p100", "k80"), map(float, r))),
                     "total_steps": float(rng.integers(1_000, 50_000)),
                     "arrival_time": float(i * 30.0) if arrivals else 0.0}
                    for i, r in enumerate(rates)]}
    path.write_text(json.dumps(doc))


def handles_sigterm(pid: int) -> bool:
    """Whether process `pid` has installed its SIGTERM handler (Linux: SigCgt in its status)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return True  # it has already ended
    caught = next(line for line in status.splitlines() if line.startswith("SigCgt:"))
    return bool(int(caught.split()[1], 16) >> (signal.SIGTERM - 1) & 1)


def interrupt_at_random(runs: list[list[str]], seconds: float, rng: random.Random):
    """Start the CLI once per argument list, all at once (two cores halve the wall time); wait
    until each handles signals (the interpreter's own start-up is not the command's), then send
    each SIGINT or SIGTERM after its own random delay; [(exit code, signal, stderr)]."""
    processes = [subprocess.Popen([sys.executable, "-m", "schedopt.cli", *args],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                  preexec_fn=default_ctrl_c) for args in runs]
    plans = [(rng.choice([signal.SIGINT, signal.SIGTERM]), rng.uniform(0.0, seconds))
             for _ in runs]
    send_at: list[float | None] = [None] * len(runs)
    sent = [False] * len(runs)
    deadline = time.monotonic() + 30
    while not all(sent):
        now = time.monotonic()
        for i, process in enumerate(processes):
            if send_at[i] is None and (handles_sigterm(process.pid) or now > deadline):
                send_at[i] = now + plans[i][1]
            if not sent[i] and send_at[i] is not None and now >= send_at[i]:
                process.send_signal(plans[i][0])
                sent[i] = True
        time.sleep(0.002)
    errors = [process.communicate(timeout=120)[1] for process in processes]
    return [(process.returncode, sent_signal, err)
            for process, (sent_signal, _), err in zip(processes, plans, errors)]


def check_exit(code: int, sent: signal.Signals, err: str) -> None:
    expected = 130 if sent == signal.SIGINT else 143
    assert code in (0, expected), (code, sent, err)
    assert "Traceback" not in err, err
    if code == expected:
        lines = [line for line in err.splitlines() if line.strip()]
        assert lines and lines[-1].startswith("interrupted"), err


def outputs_two_at_a_time(tmp_path: Path, trial_count: int, name: str):
    """Per pair of trials (each pair runs at once), each trial's output path, in its own folder."""
    for start in range(0, trial_count, 2):
        outs = []
        for trial in range(start, min(start + 2, trial_count)):
            (tmp_path / str(trial)).mkdir()
            outs.append(tmp_path / str(trial) / name)
        yield outs


@pytest.mark.parametrize("trial_count", [TRIALS])
def test_solve_output_is_whole_or_untouched(tmp_path, trial_count):
    instance = tmp_path / "big.json"
    big_instance(instance, 20_000, arrivals=False)
    rng = random.Random(1)
    for outs in outputs_two_at_a_time(tmp_path, trial_count, "result.json"):
        outs[-1].write_text('{"old": "complete"}\n')  # one of each pair replaces a whole file
        results = interrupt_at_random(
            [["solve", str(instance), "--output", str(out), "--json"] for out in outs], 4.0, rng)
        for out, (code, sent, err) in zip(outs, results):
            check_exit(code, sent, err)
            if out.exists():
                doc = json.loads(out.read_text())  # never truncated
                assert doc == {"old": "complete"} or doc["format"] == "schedopt-result/1"
            assert not list(out.parent.glob(".*.partial")), "a temporary file was left behind"
        assert instance.stat().st_size > 0


@pytest.mark.parametrize("trial_count", [TRIALS])
def test_simulate_jobs_csv_is_whole_or_absent(tmp_path, trial_count):
    trace = tmp_path / "trace.json"
    big_instance(trace, 300, arrivals=True)
    rng = random.Random(2)
    for outs in outputs_two_at_a_time(tmp_path, trial_count, "jobs.csv"):
        results = interrupt_at_random(
            [["simulate", str(trace), "--jobs-csv", str(out)] for out in outs], 6.0, rng)
        for out, (code, sent, err) in zip(outs, results):
            check_exit(code, sent, err)
            if out.exists():
                frame = pd.read_csv(out)
                assert len(frame) == 300
            assert not list(out.parent.glob(".*.partial"))


ENTRY_WITH = """
import signal, sys, time, weakref
import click
import schedopt.cli.main as cli_main
from schedopt.cli import interrupts

@click.command()
def command():
    interrupts.wrote("a.csv")
    {action}

class Box:
    pass

def lost_in_callback(exc):
    def callback(ref):
        raise exc
    box = Box()
    ref = weakref.ref(box, callback)
    del box
    for _ in range(1000):  # the command goes on; the interrupt must reach it
        time.sleep(0.01)

def parsing_interrupted(*args, **kwargs):
    interrupts.wrote("a.csv")
    raise KeyboardInterrupt

if {while_parsing}:
    command.make_context = parsing_interrupted
cli_main.main = command
from schedopt.cli.entry import run
run()
"""


@pytest.mark.parametrize("action, code, line", [
    ("raise KeyboardInterrupt", 130, "interrupted (Ctrl-C): wrote a.csv"),
    ("while parsing", 130, "interrupted (Ctrl-C): wrote a.csv"),
    ("raise interrupts.Terminated()", 143, "interrupted (SIGTERM): wrote a.csv"),
    ("exec('raise KeyboardInterrupt')", 130, "interrupted (Ctrl-C): wrote a.csv"),
    ("signal.raise_signal(signal.SIGINT)", 130, "interrupted (Ctrl-C): wrote a.csv"),
    # Ctrl-C while a compiled extension initializes surfaces as that import's ImportError
    # (seen with highspy under the kill test): still an interrupt.
    ("raise ImportError('initialization failed') from KeyboardInterrupt()", 130,
     "interrupted (Ctrl-C): wrote a.csv"),
    ("raise ImportError('initialization failed') from interrupts.Terminated()", 143,
     "interrupted (SIGTERM): wrote a.csv"),
    # Ctrl-C inside a callback whose exceptions Python only prints and drops (seen in the
    # import system's module-lock cleanup under the kill test): delivered again, not lost.
    ("lost_in_callback(KeyboardInterrupt())", 130, "interrupted (Ctrl-C): wrote a.csv"),
    ("lost_in_callback(interrupts.Terminated())", 143, "interrupted (SIGTERM): wrote a.csv"),
    ("sys.exit(0)", 0, None),
    ("sys.exit(2)", 2, None),
])
def test_console_script_exit_status(action, code, line):
    """The console script's exit status is exactly 130/143 after an interrupt (never death by
    the signal itself, nor click's "Aborted!" when the interrupt comes while click parses the
    arguments), names what was written, and leaves other exit codes alone."""
    parsing = action == "while parsing"
    script = ENTRY_WITH.format(action="pass" if parsing else action, while_parsing=parsing)
    process = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                             timeout=120, preexec_fn=default_ctrl_c)
    assert process.returncode == code, process.stderr
    lines = [text for text in process.stderr.splitlines() if text.strip()]
    if line is None:
        assert not lines, process.stderr
    else:
        assert lines == [line], process.stderr
