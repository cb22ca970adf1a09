"""The plain loops that Concord's batched paths must equal, and that the benchmarks time them against.

Nothing in the application calls these: the tests compare the batched scoring, sampling and judging with them, and
`bench_generation.py`, `bench_judge.py` and `profile_paths.py` use them as the baseline. Importable from the
repository's root (`from benchmarks.reference import sequence_loss`), where pytest and the benchmark scripts run.
"""

from __future__ import annotations

from collections.abc import Sequence

from generation.engines.base import DEFAULT_PROB_SCORE, ScoreItem, ScoreResult, candidate_texts
from generation.engines.base import score_result as _result
from generation.engines.hf.loading import LoadedModel
from generation.engines.hf.sampling import Decoding
from judging.scoring import Verdict, likelihood_verdict, option_ids


def sequence_loss(*, loaded: LoadedModel, text: str, prob_score: str = DEFAULT_PROB_SCORE) -> float:
    """One text's mean token loss (or, with `prob_score="sum"`, its summed token loss), as
    `model(ids, labels=ids).loss` computes it."""
    import torch

    ids = loaded.tokenizer(text, return_tensors="pt").input_ids.to(loaded.device)
    with torch.inference_mode():
        mean = float(loaded.model(input_ids=ids, labels=ids).loss)
    return mean * (ids.shape[-1] - 1) if prob_score == "sum" else mean


def score_one_at_a_time(*, loaded: LoadedModel, items: Sequence[ScoreItem]) -> list[ScoreResult]:
    """Probability scoring as a plain loop: one forward pass per candidate (`score_instances` batched)."""
    return [
        _result(
            item,
            {
                base: sequence_loss(loaded=loaded, text=text, prob_score=item.prob_score)
                for base, text in candidate_texts(item)
            },
        )
        for item in items
    ]


def sample_one_context(*, loaded: LoadedModel, context: str, decoding: Decoding, seed: int) -> list[str]:
    """Sampling as a plain loop's step: one plain `generate` call of all samples for one context."""
    import torch
    from transformers import set_seed

    set_seed(seed)
    encoded = loaded.tokenizer(context, return_tensors="pt").to(loaded.device)
    with torch.inference_mode():
        output = loaded.model.generate(
            **encoded,
            do_sample=True,
            max_new_tokens=decoding.max_new_tokens,
            min_new_tokens=decoding.max_new_tokens,
            top_k=decoding.top_k,
            top_p=decoding.top_p,
            num_beams=decoding.num_beams,
            num_return_sequences=decoding.samples,
            pad_token_id=loaded.tokenizer.pad_token_id,
        )
    return loaded.tokenizer.batch_decode(output[:, encoded.input_ids.shape[1] :], skip_special_tokens=True)


def likelihood_judge_plain(*, loaded: LoadedModel, prompts: Sequence[str], options: dict[str, str]) -> list[Verdict]:
    """The likelihood judge as a plain loop: one forward pass per prompt and option, each option's score the mean
    log-probability of its tokens after the prompt (`judging.scoring.likelihood_judge` shares the prompts)."""
    import torch

    suffixes = option_ids(loaded=loaded, options=options)
    verdicts = []
    with torch.inference_mode():
        for prompt in prompts:
            prefix = loaded.tokenizer(prompt).input_ids
            scores = []
            for suffix in suffixes:
                ids = torch.tensor([prefix + suffix], device=loaded.device)
                logprobs = torch.log_softmax(loaded.model(input_ids=ids).logits[0, :-1].float(), dim=-1)
                targets = ids[0, len(prefix) :]
                scores.append(float(logprobs[len(prefix) - 1 :].gather(-1, targets[:, None]).mean()))
            verdicts.append(likelihood_verdict(options=options, scores=scores))
    return verdicts


def sampling_judge_plain(
    *, loaded: LoadedModel, prompts: Sequence[str], options: dict[str, str], k: int, temperature: float, seed: int
) -> list[Verdict]:
    """The sampling judge as a plain loop: one `generate` call per prompt for its k answers (pure sampling at the
    temperature, an answer may end early), each answer read as `judging.scoring.sampling_judge` reads it. Its draws
    are not the batched loop's (the random numbers are used in another order): the two agree in distribution."""
    import torch
    from transformers import set_seed

    from judging.scoring import sampling_verdict

    longest = max(len(ids) for ids in option_ids(loaded=loaded, options=options))
    set_seed(seed)
    verdicts = []
    with torch.inference_mode():
        for prompt in prompts:
            encoded = loaded.tokenizer(prompt, return_tensors="pt").to(loaded.device)
            output = loaded.model.generate(
                **encoded,
                do_sample=True,
                max_new_tokens=longest + 4,
                top_k=0,
                top_p=1.0,
                temperature=temperature,
                num_return_sequences=k,
                pad_token_id=loaded.tokenizer.pad_token_id,
            )
            answers = loaded.tokenizer.batch_decode(output[:, encoded.input_ids.shape[1] :], skip_special_tokens=True)
            verdicts.append(sampling_verdict(options=options, answers=answers))
    return verdicts
