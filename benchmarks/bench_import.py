"""Memory and time of importing a large generations file (docs/domain.md, 'The annotation pool'): the shape of the
75 MB, 200,000-row upload that once took a web process to 1.28 GB.

    python benchmarks/bench_import.py [--rows 200000]
    python benchmarks/bench_import.py --templates 100000   # a templates dataset (docs/domain.md, 'Your own templates')
    python benchmarks/bench_import.py --templates 100000 --database postgres://postgres@127.0.0.1:5432/EMPTY

Writes a file of `--rows` rows of about 375 bytes each (MISGENDERED, pre-[MASK], distinct continuations) to a
temporary directory, imports it into a fresh SQLite database there (or the empty database `--database` names, which
the script migrates) with the service the pages, the API and the command call, and prints one JSON object: `file_mb`,
`rows`, `seconds`, `peak_rss_mb` (the process's peak resident memory, Python and Django included), `rss_before_mb`
(the same before the import), and the machine's load average.

With `--templates N`: a codebook of 6 families (ey and fae among them), a templates CSV and a names file that give
N instances (N / 150 templates x 6 families x 25 names), imported with `import_dataset templates`' service; prints
`instances`, `seconds`, `cpu_seconds` (this process's), `rows_per_second` and the same memory figures.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
WORK = Path(tempfile.mkdtemp(prefix="concord-bench-import-"))
# `--database URL`, read before Django starts; argparse below documents it.
os.environ["DATABASE_URL"] = (
    sys.argv[sys.argv.index("--database") + 1]
    if "--database" in sys.argv[:-1]
    else f"sqlite:///{WORK / 'bench.sqlite3'}"
)
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402

from annotation.services.imports import generations_import  # noqa: E402

TEMPLATE = "Robin/'s pronouns are xe/xem/xyrs. Robin baked bread for the whole street. {mask_token} sold it at noon."
PRE = "Robin/'s pronouns are xe/xem/xyrs. Robin baked bread for the whole street. "


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def write_file(path: Path, rows: int) -> None:
    filler = "and then they walked to the market, talked with the baker about the weather and the price of flour "
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["template", "random_pre_gen", "correct", "pronoun", "model"])
        for n in range(rows):
            writer.writerow([TEMPLATE, f"{PRE}Xe smiled, row {n}, {filler}{filler[: n % 60]}", "1.0", "xe", "m"])


CODEBOOK = """base,nom,acc,pos_dep,pos_ind,ref
he,he,him,his,his,himself
she,she,her,her,hers,herself
they,they,them,their,theirs,themself
xe,xe,xem,xyr,xyrs,xemself
ey,ey,em,eir,eirs,emself
fae,fae,faer,faer,faers,faerself
"""
FAMILIES, NAMES_PER_TEMPLATE = 6, 25


def templates_main(instances: int) -> None:
    from generation.datasets.templates import dataset_import_templates

    templates = max(1, instances // (FAMILIES * NAMES_PER_TEMPLATE))
    codebook, names, path = WORK / "codebook.csv", WORK / "names.txt", WORK / "templates.csv"
    codebook.write_text(CODEBOOK, encoding="utf-8")
    names.write_text("".join(f"Name{n}\n" for n in range(500)), encoding="utf-8")
    forms = ["nom", "acc", "pos_dep", "pos_ind", "ref"]
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "template", "group"])
        for n in range(templates):
            writer.writerow(
                [
                    f"t{n}",
                    f"{{name}} uses {{nom}}/{{acc}}. {{name}} fixed bike {n}. {{target:{forms[n % 5]}}} rode.",
                    "g",
                ]
            )
    before = peak_rss_mb()
    start, cpu = time.perf_counter(), time.process_time()
    result = dataset_import_templates(
        codebook_path=codebook, templates_path=path, names_path=names, names_per_template=NAMES_PER_TEMPLATE
    )
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    print(
        json.dumps(
            {
                "instances": result.instances,
                "templates": templates,
                "seconds": round(seconds, 1),
                "cpu_seconds": round(cpu, 1),
                "rows_per_second": round(result.instances / seconds),
                "rss_before_mb": round(before),
                "peak_rss_mb": round(peak_rss_mb()),
                "load_average": os.getloadavg(),
            }
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--templates", type=int, default=None, help="import a templates dataset of this many instances")
    parser.add_argument("--database", help="an empty database to import into (default: a new SQLite file)")
    args = parser.parse_args()
    call_command("migrate", verbosity=0)
    if args.templates is not None:
        templates_main(args.templates)
        return
    path = WORK / "generations.csv"
    write_file(path, args.rows)
    before = peak_rss_mb()
    start = time.perf_counter()
    result = generations_import(paths=[path], pool_name="bench")
    seconds = time.perf_counter() - start
    print(
        json.dumps(
            {
                "file_mb": round(path.stat().st_size / 1024 / 1024, 1),
                "rows": result.rows,
                "items": result.items,
                "seconds": round(seconds, 1),
                "rss_before_mb": round(before),
                "peak_rss_mb": round(peak_rss_mb()),
                "load_average": os.getloadavg(),
            }
        )
    )


if __name__ == "__main__":
    main()
