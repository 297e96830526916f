from pathlib import Path

from corpus.examples import example_path

ROOT = Path(__file__).resolve().parents[1]
#: The packaged 7f3a example (corpus/examples/7f3a/7f3a.jsonl), found the way an installed toolkit finds it.
EXAMPLE_7F3A = example_path("7f3a")
