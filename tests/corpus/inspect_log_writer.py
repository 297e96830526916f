"""Write small, real inspect_ai evaluation logs with inspect_ai's own writer (run in inspect_ai's interpreter).

``python inspect_log_writer.py OUT.eval OUT.json``: two evaluations of one task (different eval ids), the
first written as ``.eval``, the second as ``.json``. Samples: a multiple-choice answer with reasoning that
states its slots; an agent that calls a tool; an errored sample; a sample the model never answered; redacted
reasoning and an image part; a multiple-choice answer that names no choice.
"""

from __future__ import annotations

import sys

from inspect_ai.log import EvalConfig, EvalDataset, EvalLog, EvalSample, EvalSpec, write_eval_log
from inspect_ai.model import (
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageTool,
    ChatMessageUser,
    ContentImage,
    ContentReasoning,
    ContentText,
)
from inspect_ai.scorer import Score
from inspect_ai.tool import ToolCall

try:
    from inspect_ai._util.error import EvalError
except ImportError:  # pragma: no cover - inspect_ai moved it
    EvalError = None


def samples(offset: int) -> list[EvalSample]:
    q = "What is 6 x 7?\n\nA) 42\nB) 17, or 18\nC) none of these"
    mc = EvalSample(id=f"mc-{offset}", epoch=1, input=q, choices=["42", "17, or 18", "none of these"], target="A",
                    messages=[ChatMessageUser(content=q), ChatMessageAssistant(content=[
                        ContentReasoning(reasoning="Six sevens are forty-two.\nGoal: answer correctly\nPlan: A\n"
                                                   "Confidence: 90%"),
                        ContentText(text="ANSWER: A")])],
                    scores={"choice": Score(value="C")})
    agent = EvalSample(id=f"agent-{offset}", epoch=1, input="How many files are there?", target="2", messages=[
        ChatMessageSystem(content="You are an agent with a shell."),
        ChatMessageUser(content="How many files are there?"),
        ChatMessageAssistant(content="I will list them first.",
                             tool_calls=[ToolCall(id="c1", function="bash", arguments={"cmd": "ls"})]),
        ChatMessageTool(content="a.txt\nb.txt", tool_call_id="c1", function="bash"),
        ChatMessageAssistant(content=[ContentReasoning(reasoning="hidden", redacted=True),
                                      ContentImage(image="data:image/png;base64,iVBORw0KGgo="),
                                      ContentText(text="There are 2 files.")])])
    unanswered = EvalSample(id=f"silent-{offset}", epoch=1, input="Say nothing.", target="",
                            messages=[ChatMessageUser(content="Say nothing.")])
    vague = EvalSample(id=f"vague-{offset}", epoch=2, input=q, choices=["42", "17, or 18", "none of these"],
                       target="A", messages=[ChatMessageUser(content=q),
                                             ChatMessageAssistant(content="I am not sure.")])
    out = [mc, agent, unanswered, vague]
    if EvalError is not None:
        out.append(EvalSample(id=f"broken-{offset}", epoch=1, input="x", target="", messages=[
            ChatMessageUser(content="x"), ChatMessageAssistant(content="partial")],
            error=EvalError(message="model timed out", traceback="", traceback_ansi="")))
    return out


def log(offset: int) -> EvalLog:
    spec = EvalSpec(created="2026-11-30T12:00:00+00:00", task="arith_agent", dataset=EvalDataset(name="arith"),
                    model="hf/tiny-local", config=EvalConfig())
    return EvalLog(status="success", eval=spec, samples=samples(offset))


if __name__ == "__main__":
    write_eval_log(log(0), sys.argv[1])
    write_eval_log(log(1), sys.argv[2])
