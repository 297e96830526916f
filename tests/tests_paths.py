from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE_7F3A = ROOT / "examples" / "7f3a" / "7f3a.jsonl"
