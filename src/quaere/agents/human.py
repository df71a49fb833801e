"""A person at the terminal as the question source (``quaere run --source human``).

At each moment the live view steps aside and the person sees the moment, the evidence and the bank's
suggestions; they answer with a number (take it), ``e N`` (edit it), or their own question.
"""

from __future__ import annotations

from collections.abc import Callable

from quaere.agents.display import Display


def terminal_ask(display: Display, read: Callable[[str], str] = input, write: Callable[[str], None] = print):
    """An ``ask_fn`` for :class:`quaere.questions.sources.HumanSource` reading ``read`` and writing ``write``."""
    from quaere.questions.sources import Edit, HumanPrompt, OwnText, Pick

    def ask(prompt: HumanPrompt):
        display.pause()
        write(f"\n== moment: {prompt.moment.value}\n   evidence: {prompt.evidence}")
        for s in prompt.suggestions:
            write(f"   {s.rank}. [{s.entry.id}] {s.entry.question}\n      ({s.reason})")
        while True:
            answer = read("Your question (a number to take it, 'e N' to edit it, or your own words): ").strip()
            if answer.isdigit() and 1 <= int(answer) <= len(prompt.suggestions):
                return Pick(index=int(answer))
            if answer.lower().startswith("e ") and answer[2:].strip().isdigit():
                index = int(answer[2:].strip())
                if 1 <= index <= len(prompt.suggestions):
                    text = read(f"Edit: {prompt.suggestions[index - 1].entry.question}\n> ").strip()
                    if text:
                        return Edit(index=index, text=text)
                    continue
            if len(answer) > 3 and not answer.isdigit():
                return OwnText(text=answer)
            write("   (expected a suggestion number, 'e N', or a question in your own words)")

    return ask
