"""Throughput of the LLM judge (prefix-shared, batched) against the plain loop, on the default model.

    python benchmarks/bench_judge.py --items 32
    python benchmarks/bench_judge.py --job 48      # `manage.py judge --job` end to end, in a scratch SQLite database
    python benchmarks/bench_judge.py --job 48 --mode sampling --k 5 --temperature 0.7

With `--job N`: a scratch database (SQLite in a temporary directory, migrated) holds one finished generation job of
N generations built like the items below; `manage.py judge --job ID` runs over it as a job (chunks, progress, the
labels written), in the foreground as without a broker; the plain loop scores the same generations' prompts before
and after it. It prints generations per second each way, the ratio, the load, and the projected time of a full
MISGENDERED job of one model (30,000 generations) at the job's rate. With `--mode sampling`, the plain loop is one
`generate` call per prompt for its k answers (`benchmarks.reference.sampling_judge_plain`); its random draws are
not the job's, so it prints each label's share each way instead of comparing labels one by one.

Builds the default judge prompt (judging/prompts.py) for N items: the demo pool's style of item (a declared pronoun,
a context, a 50-token-long continuation), each prompt different. The plain loop runs one forward pass per item and
option (the prompt and the option together, as `benchmarks.reference.likelihood_judge_plain` does); the judge runs each
prompt once and the options from its key/value cache, batched. Checks that both give the same scores (to 1e-4) and
prints one JSON line: items judged per second each way and the ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

PRONOUNS = ["he", "she", "they", "xe"]
NAMES = ["Robin", "Alex", "Sam", "Kai", "Noor", "Jude", "Ash", "Rey"]
STARTS = ["went to the market and", "called the office because", "finished the report while", "walked home after"]
ENDS = [
    "{nom} bought bread for {pos} neighbour, who thanked {acc} twice.",
    "everyone said {nom} had done the best work of the week.",
    "the manager asked the engineer to help, and the engineer agreed.",
    "{nom} smiled at the crowd and waved at {pos} friends near the door.",
]


CONTEXTS: list[str] = []
CONTINUATIONS: list[str] = []


def prompts(n: int, samples: int = 1) -> list[str]:
    """n prompts; with `samples`, each context has that many generations in a row, as a job's samples have."""
    from generation.datasets.registry import codebook_for
    from judging.prompts import DEFAULT_TEMPLATE, PromptItem, default_options, prompt_render

    codebook = codebook_for("misgendered")
    built = []
    for i in range(n):
        c = i // samples  # the context's number
        base = PRONOUNS[c % 4]
        forms = codebook.table[PRONOUNS[(i // 4) % 4]]  # the text's pronouns: right or wrong
        name = NAMES[c % len(NAMES)]
        context = (
            f"{name}'s pronouns are {'/'.join(codebook.table[base][f] for f in ('nom', 'acc', 'pos_dep'))}. {name} "
        )
        parts = [STARTS[i % 4], ENDS[(i // 2) % 4]] + ([ENDS[(i + 1) % 4]] if samples > 1 else [])
        text = " ".join(parts).format(nom=forms["nom"], acc=forms["acc"], pos=forms["pos_dep"])
        CONTEXTS.append(context)
        CONTINUATIONS.append(text)
        item = PromptItem(context=context, generation=text, dataset="misgendered", pronoun=base)
        built.append(prompt_render(template=DEFAULT_TEMPLATE, options=default_options(), item=item))
    return built


FULL_JOB = 30_000  # one model's MISGENDERED job: 3,000 instances x 2 settings x 5 samples
SAMPLES = 5  # a job's samples per context: the --job run's generations come 5 to a context


def bench_job(n: int, mode: str = "likelihood", k: int = 5, temperature: float = 0.7) -> dict:
    """`manage.py judge --job` over a job of n generations, against the plain loop on the same prompts (sampling mode:
    one `generate` call per prompt for its k answers; its draws are not the job's, so the labels agree in share, not
    one by one)."""
    import torch
    from django.core.management import call_command

    from benchmarks.reference import likelihood_judge_plain, sampling_judge_plain
    from generation.engines.hf.loading import model_load
    from generation.jobs.services import job_record
    from generation.models import (
        DEFAULT_MODEL_FIELDS,
        DEFAULT_MODEL_NAME,
        Dataset,
        Generation,
        Instance,
        LanguageModel,
        Template,
    )  # fmt: skip
    from generation.parameters import JobParameters
    from judging.models import JudgeRun, MachineLabel
    from judging.scoring import option_probabilities
    from judging.selectors import generation_prompt
    from judging.services.judges import judge_add

    call_command("migrate", verbosity=0)
    model, _ = LanguageModel.objects.get_or_create(name=DEFAULT_MODEL_NAME, defaults=DEFAULT_MODEL_FIELDS)
    dataset = Dataset.objects.create(name="bench", kind="misgendered", source="bench", import_signature="bench")
    job = job_record(
        params=JobParameters(model=model, dataset=dataset, pronouns=PRONOUNS, settings=["pre"], samples=SAMPLES),
        units=0,
        items=0,
    )
    prompts(n, samples=SAMPLES)  # fills CONTEXTS and CONTINUATIONS: each context's 5 samples in a row, as in a job
    for i in range(n):
        c = i // SAMPLES
        if i % SAMPLES == 0:
            template = Template.objects.create(dataset=dataset, source_id=f"t{c}", line=c + 2, text="{name} [MASK]",
                                               mask="[MASK]", form="nom")  # fmt: skip
            instance = Instance.objects.create(template=template, dataset=dataset, pronoun=PRONOUNS[c % 4],
                                               name="Robin", text="Robin [MASK]", correct_form="xe", ordinal=c)  # fmt: skip
        Generation.objects.create(job=job, instance=instance, setting="pre", sample_index=i % SAMPLES,
                                  context=CONTEXTS[i], continuation=CONTINUATIONS[i], heuristic_correct=True)  # fmt: skip
    judge = judge_add(name="bench", model=model, mode=mode)[0]
    loaded = model_load(language_model=model)
    # The run as `manage.py judge --job` makes it, in chunks of the model's batch size as a full job's are (a small
    # job is cut into about 20 chunks, so that its progress moves: 2 generations a chunk here would hide the batching).
    from generation.jobs.services import job_run
    from generation.models import JobChunk
    from judging.services.runs import judge_run_create

    sampled = {"k": k, "temperature": temperature} if mode == "sampling" else {}
    run, _ = judge_run_create(job=job.pk, judge=judge.name, queue=False, **sampled)
    ids = [unit for chunk in JobChunk.objects.filter(job=run.job).order_by("index") for unit in chunk.unit_ids]
    JobChunk.objects.filter(job=run.job).delete()
    size = model.batch_size
    JobChunk.objects.bulk_create(
        JobChunk(job=run.job, index=index, unit_ids=ids[start : start + size])
        for index, start in enumerate(range(0, len(ids), size))
    )
    generations = list(
        Generation.objects.filter(job=job).select_related("instance", "job__generation_run__dataset").order_by("id")
    )
    job_prompts = [generation_prompt(judge=judge, generation=g) for g in generations]

    def plain_loop(texts):
        if mode == "sampling":
            return sampling_judge_plain(
                loaded=loaded, prompts=texts, options=judge.option_map, k=k, temperature=temperature, seed=0
            )
        return likelihood_judge_plain(loaded=loaded, prompts=texts, options=judge.option_map)

    plain_loop(job_prompts[:1])  # warm-up
    # The checks a worker runs once per loaded model (the tree pass against the plain one, the shared-context
    # attention against the copied cache): timed here, apart from the job, as the model's loading is.
    from generation.engines.hf.scoring import _tree_agrees
    from generation.engines.hf.shared_attention import shared_attention_ready

    start = time.perf_counter()
    _tree_agrees(loaded)
    shared_attention_ready(loaded)
    checks_seconds = time.perf_counter() - start
    # Bracketed: the plain loop, the job, the plain loop again, in this process; the ratio takes the plain loop's mean.
    loads = [os.getloadavg()[0]]
    plain_seconds = []
    start = time.perf_counter()
    plain = plain_loop(job_prompts)
    plain_seconds.append(time.perf_counter() - start)
    loads.append(os.getloadavg()[0])
    start = time.perf_counter()
    job_run(job_id=run.job_id)
    job_seconds = time.perf_counter() - start
    loads.append(os.getloadavg()[0])
    start = time.perf_counter()
    plain_loop(job_prompts)
    plain_seconds.append(time.perf_counter() - start)
    loads.append(os.getloadavg()[0])
    run = JudgeRun.objects.get(source_job=job)
    written = {row.generation_id: row for row in MachineLabel.objects.filter(run=run)}
    labels = {pk: row.label for pk, row in written.items()}
    if mode == "likelihood":
        worst = max(
            abs(option_probabilities("likelihood", judge.option_map, written[g.pk].scores)[label] - expected)
            for g, verdict in zip(generations, plain, strict=True)
            for label, expected in option_probabilities("likelihood", judge.option_map, verdict.scores).items()
        )
        compared = {
            "same_labels": [labels[g.pk] for g in generations] == [v.label for v in plain],
            "max_probability_difference": worst,
        }
    else:  # other draws: the share of each label, each way
        shares = {
            way: {label: round(sum(got == label for got in found) / n, 3) for label in [*judge.option_map, ""]}
            for way, found in (("job", [labels[g.pk] for g in generations]), ("plain", [v.label for v in plain]))
        }
        compared = {"label_shares": shares, "k": k, "temperature": temperature}
    rate = n / job_seconds
    plain_mean = sum(plain_seconds) / len(plain_seconds)
    return {
        "mode": mode,
        "generations": n,
        "samples_per_context": SAMPLES,
        "chunk_size": size,
        "job_state": JudgeRun.objects.get(pk=run.pk).state,
        "labels_written": len(labels),
        "torch_threads": torch.get_num_threads(),
        "plain_generations_per_s": [round(n / seconds, 3) for seconds in plain_seconds],
        "judge_job_generations_per_s": round(rate, 3),
        "speedup": round(plain_mean / job_seconds, 2),
        "speedup_each_side": [round(seconds / job_seconds, 2) for seconds in plain_seconds],
        "once_per_process_checks_s": round(checks_seconds, 2),
        **compared,
        "projected_hours_for_30000": round(FULL_JOB / rate / 3600, 2),
        "load_1min": [round(x, 2) for x in loads],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=32)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--job", type=int, default=None, help="run `judge --job` over a scratch job of N generations")
    parser.add_argument("--mode", choices=["likelihood", "sampling"], default="likelihood", help="the judge's (--job)")
    parser.add_argument("--k", type=int, default=5, help="answers per item, sampling mode (--job)")
    parser.add_argument("--temperature", type=float, default=0.7, help="sampling mode (--job)")
    arguments = parser.parse_args()

    if arguments.job:
        import tempfile

        scratch = tempfile.mkdtemp(prefix="bench-judge-")
        os.environ["DATABASE_URL"] = f"sqlite:///{scratch}/bench.sqlite3"
        os.environ.pop("CELERY_BROKER_URL", None)
        import django

        django.setup()
        print(json.dumps(bench_job(arguments.job, arguments.mode, arguments.k, arguments.temperature)))
        return

    import django

    django.setup()
    import torch

    from benchmarks.reference import likelihood_judge_plain
    from generation.engines.hf.loading import model_load
    from generation.models import DEFAULT_MODEL_FIELDS, DEFAULT_MODEL_NAME, LanguageModel
    from judging.prompts import default_options
    from judging.scoring import likelihood_judge

    loaded = model_load(language_model=LanguageModel(name=DEFAULT_MODEL_NAME, **DEFAULT_MODEL_FIELDS))
    texts = prompts(arguments.items)
    options = default_options()
    likelihood_judge(loaded=loaded, prompts=texts[:2], options=options)  # warm-up
    start = time.perf_counter()
    batched = likelihood_judge(loaded=loaded, prompts=texts, options=options, batch_size=arguments.batch_size)
    batched_seconds = time.perf_counter() - start
    start = time.perf_counter()
    plain = likelihood_judge_plain(loaded=loaded, prompts=texts, options=options)
    plain_seconds = time.perf_counter() - start
    worst = max(abs(a.scores[k] - b.scores[k]) for a, b in zip(batched, plain, strict=True) for k in options)
    print(
        json.dumps(
            {
                "items": len(texts),
                "options": len(options),
                "prompt_tokens_mean": round(sum(len(loaded.tokenizer(t).input_ids) for t in texts) / len(texts), 1),
                "batch_size": arguments.batch_size,
                "torch_threads": torch.get_num_threads(),
                "plain_items_per_s": round(len(texts) / plain_seconds, 3),
                "judge_items_per_s": round(len(texts) / batched_seconds, 3),
                "speedup": round(plain_seconds / batched_seconds, 2),
                "max_score_difference": worst,
                "same_labels": [a.label for a in batched] == [b.label for b in plain],
                "load_average": [round(x, 2) for x in os.getloadavg()],
            }
        )
    )


if __name__ == "__main__":
    main()
