from collections import Counter, defaultdict

import pandas as pd
import pytest
from django.core.management import CommandError, call_command

from annotation.models import Pool, PoolItem
from annotation.services import PoolSampleError, pool_sample
from generation.models import Generation, Instance
from tests.annotation.factories import job_with_generations
from tests.factories import GenerationFactory, InstanceFactory, TemplateFactory


def cells_of(pool_name: str) -> dict[tuple, dict[int, list[int]]]:
    """cell -> instance id -> sorted sample indices drawn."""
    cells: dict[tuple, dict[int, list[int]]] = defaultdict(lambda: defaultdict(list))
    for item in PoolItem.objects.filter(pool__name=pool_name).select_related("generation"):
        cell = (item.model_name, item.dataset, item.setting, item.pronoun)
        cells[cell][item.generation.instance_id].append(item.sample_index)
    return {cell: {k: sorted(v) for k, v in instances.items()} for cell, instances in cells.items()}


@pytest.mark.django_db
class TestPoolSampleWholeInstances:
    def test_it_draws_five_distinct_instances_per_cell_each_with_all_five_samples(self):
        job = job_with_generations(instances_per_pronoun=8, samples=5)

        result = pool_sample(name="p", job_ids=[job.pk], seed=1)

        assert result.items == 2 * 2 * 25 and result.draw == "instances"
        cells = cells_of("p")
        assert len(cells) == 4
        for instances in cells.values():
            assert len(instances) == 5
            assert all(indices == [0, 1, 2, 3, 4] for indices in instances.values())
        assert Pool.objects.get(name="p").per_cell == 25

    def test_it_is_deterministic_for_a_seed_and_varies_with_it(self):
        job = job_with_generations(instances_per_pronoun=10, samples=5)

        def drawn(name, seed):
            pool_sample(name=name, job_ids=[job.pk], seed=seed)
            return sorted(PoolItem.objects.filter(pool__name=name).values_list("generation_id", flat=True))

        assert drawn("a", 7) == drawn("b", 7)
        assert drawn("a2", 7) != drawn("c", 8)

    def test_it_takes_the_number_of_instances_as_a_parameter(self):
        job = job_with_generations(instances_per_pronoun=4, samples=3, pronouns=("he",), settings=("pre",))

        result = pool_sample(name="p", job_ids=[job.pk], instances=2, seed=0)

        [instances] = cells_of("p").values()
        assert result.items == 6 and len(instances) == 2
        assert all(indices == [0, 1, 2] for indices in instances.values())

    def test_it_skips_instances_missing_a_sample(self):
        job = job_with_generations(instances_per_pronoun=2, samples=5, pronouns=("he",), settings=("pre",))
        incomplete = Generation.objects.filter(job=job).order_by("instance_id").first().instance
        Generation.objects.filter(instance=incomplete, sample_index=3).delete()

        result = pool_sample(name="p", job_ids=[job.pk], instances=1, seed=0)

        [instances] = cells_of("p").values()
        assert result.items == 5 and list(instances) != [incomplete.pk]

    def test_it_reports_a_cell_without_enough_whole_instances_and_writes_nothing(self):
        job = job_with_generations(instances_per_pronoun=4, samples=5, pronouns=("he",), settings=("pre",))
        Generation.objects.filter(job=job, instance__name="P0", sample_index=4).delete()

        with pytest.raises(PoolSampleError) as error:
            pool_sample(name="p", job_ids=[job.pk], instances=4, seed=0)

        assert "1 cell(s) have too few instances with all their samples" in str(error.value)
        assert "test-model x misgendered x pre x he: 3 instances with all 5 samples, 4 wanted" in str(error.value)
        assert not Pool.objects.exists() and not PoolItem.objects.exists()

    def test_it_keeps_the_whole_instances_of_a_short_cell_when_allowed(self):
        job = job_with_generations(instances_per_pronoun=2, samples=5, pronouns=("he",), settings=("pre",))

        result = pool_sample(name="p", job_ids=[job.pk], seed=0, allow_short=True)

        assert result.items == 10 and len(result.short) == 1
        [instances] = cells_of("p").values()
        assert len(instances) == 2

    def test_it_draws_the_instances_the_seeds_pandas_sample_picks(self):
        # The seed's script: `df[col].sample(n=5, random_state=131719)` over each per-pronoun frame, afresh per cell.
        job = job_with_generations(instances_per_pronoun=30, samples=5, pronouns=("he", "xe"), settings=("pre",))

        pool_sample(name="p", job_ids=[job.pk], seed=131719)

        for pronoun in ("he", "xe"):
            frame = pd.Series(
                Instance.objects.filter(dataset=job.dataset, pronoun=pronoun)
                .order_by("ordinal")
                .values_list("pk", flat=True)
            )
            expected = set(frame.sample(n=5, random_state=131719))
            assert set(cells_of("p")[("test-model", "misgendered", "pre", pronoun)]) == expected

    def test_it_orders_a_cell_name_draw_by_name_draw_as_the_seeds_frame_does(self):
        # The seed ran every template once per name draw, so its frame goes draw by draw (rows t * 50 + template).
        job = job_with_generations(instances_per_pronoun=0, samples=5, pronouns=("he",), settings=("pre",))
        templates = [TemplateFactory(dataset=job.dataset) for _ in range(4)]
        for template in templates:  # dataset order: template by template, each with its 3 name draws
            for draw in range(3):
                instance = InstanceFactory(template=template, pronoun="he", draw=draw, name=f"N{draw}")
                for index in range(5):
                    GenerationFactory(job=job, instance=instance, setting="pre", sample_index=index)

        pool_sample(name="p", job_ids=[job.pk], seed=131719)

        instances = Instance.objects.filter(dataset=job.dataset)
        frame = pd.Series([i.pk for i in sorted(instances, key=lambda i: (i.draw, i.ordinal))])
        expected = set(frame.sample(n=5, random_state=131719))
        assert set(cells_of("p")[("test-model", "misgendered", "pre", "he")]) == expected

    def test_it_stores_the_items_in_the_released_files_order(self):
        # docs/domain.md, "The annotation pool": per setting, the pronouns he, she, they, xe; within each, sample
        # column first (the 5 drawn instances, in draw order, for sample 1, then the same 5 for sample 2, ...).
        job = job_with_generations(instances_per_pronoun=8, samples=3, pronouns=("xe", "he"), settings=("pre", "post"))

        pool_sample(name="p", job_ids=[job.pk], instances=4, seed=131719)

        stored = list(
            PoolItem.objects.filter(pool__name="p")
            .order_by("pk")
            .values_list("setting", "pronoun", "sample_index", "generation__instance_id")
        )
        expected = []
        for setting in ("pre", "post"):
            for pronoun in ("he", "xe"):
                frame = pd.Series(
                    Instance.objects.filter(dataset=job.dataset, pronoun=pronoun)
                    .order_by("ordinal")
                    .values_list("pk", flat=True)
                )
                drawn = list(frame.sample(n=4, random_state=131719))  # in draw order
                expected += [(setting, pronoun, index, instance) for index in range(3) for instance in drawn]
        assert stored == expected


@pytest.mark.django_db
class TestPoolSample:
    def test_it_draws_per_cell_items_spread_evenly_over_the_sample_indices(self):
        job = job_with_generations(instances_per_pronoun=6, samples=5)

        result = pool_sample(name="p", job_ids=[job.pk], draw="per-sample-index", per_cell=10, seed=1)

        assert result.items == 2 * 2 * 10  # 2 settings x 2 pronouns x 10
        assert not result.short
        items = PoolItem.objects.filter(pool__name="p")
        per_cell = Counter((i.model_name, i.dataset, i.setting, i.pronoun) for i in items)
        assert set(per_cell.values()) == {10}
        per_index = Counter((i.setting, i.pronoun, i.sample_index) for i in items)
        assert set(per_index.values()) == {2}
        assert list(Pool.objects.get(name="p").jobs.all()) == [job]

    def test_it_copies_the_cell_and_the_heuristic_onto_each_item(self):
        job = job_with_generations(instances_per_pronoun=2, samples=1, pronouns=("xe",), settings=("pre",))

        pool_sample(name="p", draw="per-sample-index", per_cell=1, seed=0)

        item = PoolItem.objects.get()
        generation = item.generation
        assert (item.model_name, item.dataset, item.setting, item.pronoun) == ("test-model", "misgendered", "pre", "xe")
        assert item.context == generation.context and item.continuation == generation.continuation
        assert item.heuristic_correct == generation.heuristic_correct
        assert item.template == generation.instance.text
        assert generation.job == job

    def test_it_is_deterministic_for_a_seed_and_varies_with_it(self):
        job = job_with_generations(instances_per_pronoun=8, samples=5)

        def drawn(name, seed):
            pool_sample(name=name, job_ids=[job.pk], draw="per-sample-index", per_cell=10, seed=seed)
            return sorted(PoolItem.objects.filter(pool__name=name).values_list("generation_id", flat=True))

        assert drawn("a", 7) == drawn("b", 7)
        assert drawn("a2", 7) != drawn("c", 8)

    def test_it_reports_short_cells_and_writes_nothing(self):
        job = job_with_generations(instances_per_pronoun=1, samples=5, pronouns=("he",), settings=("pre",))

        with pytest.raises(PoolSampleError) as error:
            pool_sample(name="p", job_ids=[job.pk], draw="per-sample-index", per_cell=10, seed=0)

        assert "5 cell(s) have too few generations" in str(error.value)
        assert "test-model x misgendered x pre x he, sample index 0: 1 generations, 2 wanted" in str(error.value)
        assert not Pool.objects.exists() and not PoolItem.objects.exists()

    def test_it_keeps_short_cells_when_allowed_and_still_reports_them(self):
        job = job_with_generations(instances_per_pronoun=1, samples=5, pronouns=("he",), settings=("pre",))

        result = pool_sample(name="p", job_ids=[job.pk], draw="per-sample-index", per_cell=10, seed=0, allow_short=True)

        assert result.items == 5
        assert len(result.short) == 5
        assert PoolItem.objects.count() == 5

    def test_it_refuses_a_cell_size_that_does_not_split_across_the_sample_indices(self):
        job = job_with_generations(instances_per_pronoun=1, samples=5, pronouns=("he",), settings=("pre",))

        with pytest.raises(PoolSampleError, match="does not split evenly across the 5 sample indices"):
            pool_sample(name="p", job_ids=[job.pk], draw="per-sample-index", per_cell=12)

    def test_it_samples_only_finished_jobs(self):
        running = job_with_generations(instances_per_pronoun=1, samples=1, status="running")

        with pytest.raises(PoolSampleError, match=f"job {running.pk} is running"):
            pool_sample(name="p", job_ids=[running.pk], instances=1)
        with pytest.raises(PoolSampleError, match="no finished generation job"):
            pool_sample(name="p", instances=1)

    def test_it_refuses_an_existing_pool_name(self):
        job_with_generations(instances_per_pronoun=1, samples=1)
        pool_sample(name="p", instances=1)

        with pytest.raises(PoolSampleError, match="already exists"):
            pool_sample(name="p", instances=1)


@pytest.mark.django_db
class TestSamplePoolCommand:
    def test_it_samples_from_the_command_line(self, capsys):
        job = job_with_generations(instances_per_pronoun=2, samples=5)

        call_command("sample_pool", "--name", "cli", "--jobs", str(job.pk), "--instances", "2", "--seed", "3")

        assert "pool cli: 40 items in 4 cells" in capsys.readouterr().out
        assert PoolItem.objects.filter(pool__name="cli").count() == 40

    def test_it_keeps_the_per_sample_index_draw_on_request(self, capsys):
        job = job_with_generations(instances_per_pronoun=2, samples=5)

        call_command(
            "sample_pool", "--name", "cli", "--jobs", str(job.pk), "--draw", "per-sample-index", "--per-cell", "5"
        )

        assert "pool cli: 20 items in 4 cells" in capsys.readouterr().out

    def test_it_fails_clearly_on_short_cells(self):
        job = job_with_generations(instances_per_pronoun=1, samples=5)

        with pytest.raises(CommandError, match="too few instances with all their samples"):
            call_command("sample_pool", "--name", "cli", "--jobs", str(job.pk))
        assert not Pool.objects.exists()

    def test_it_rejects_malformed_job_ids(self):
        with pytest.raises(CommandError, match="comma-separated job ids"):
            call_command("sample_pool", "--name", "cli", "--jobs", "one,two")

    def test_it_refuses_an_option_of_the_other_draw(self):
        with pytest.raises(CommandError, match="--per-cell belongs to --draw per-sample-index"):
            call_command("sample_pool", "--name", "cli", "--per-cell", "10")
        with pytest.raises(CommandError, match="--instances belongs to --draw instances"):
            call_command("sample_pool", "--name", "cli", "--draw", "per-sample-index", "--instances", "2")
