from collections import Counter

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Pool, PoolItem
from annotation.services import PoolSampleError, pool_sample
from tests.annotation.factories import job_with_generations


@pytest.mark.django_db
class TestPoolSample:
    def test_it_draws_per_cell_items_spread_evenly_over_the_sample_indices(self):
        job = job_with_generations(instances_per_pronoun=6, samples=5)

        result = pool_sample(name="p", job_ids=[job.pk], per_cell=10, seed=1)

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

        pool_sample(name="p", per_cell=1, seed=0)

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
            pool_sample(name=name, job_ids=[job.pk], per_cell=10, seed=seed)
            return sorted(PoolItem.objects.filter(pool__name=name).values_list("generation_id", flat=True))

        assert drawn("a", 7) == drawn("b", 7)
        assert drawn("a2", 7) != drawn("c", 8)

    def test_it_reports_short_cells_and_writes_nothing(self):
        job = job_with_generations(instances_per_pronoun=1, samples=5, pronouns=("he",), settings=("pre",))

        with pytest.raises(PoolSampleError) as error:
            pool_sample(name="p", job_ids=[job.pk], per_cell=10, seed=0)

        assert "5 cell(s) have too few generations" in str(error.value)
        assert "test-model x misgendered x pre x he, sample index 0: 1 generations, 2 wanted" in str(error.value)
        assert not Pool.objects.exists() and not PoolItem.objects.exists()

    def test_it_keeps_short_cells_when_allowed_and_still_reports_them(self):
        job = job_with_generations(instances_per_pronoun=1, samples=5, pronouns=("he",), settings=("pre",))

        result = pool_sample(name="p", job_ids=[job.pk], per_cell=10, seed=0, allow_short=True)

        assert result.items == 5
        assert len(result.short) == 5
        assert PoolItem.objects.count() == 5

    def test_it_refuses_a_cell_size_that_does_not_split_across_the_sample_indices(self):
        job = job_with_generations(instances_per_pronoun=1, samples=5, pronouns=("he",), settings=("pre",))

        with pytest.raises(PoolSampleError, match="does not split evenly across the 5 sample indices"):
            pool_sample(name="p", job_ids=[job.pk], per_cell=12)

    def test_it_samples_only_finished_jobs(self):
        running = job_with_generations(instances_per_pronoun=1, samples=1, status="running")

        with pytest.raises(PoolSampleError, match=f"job {running.pk} is running"):
            pool_sample(name="p", job_ids=[running.pk], per_cell=1)
        with pytest.raises(PoolSampleError, match="no finished generation job"):
            pool_sample(name="p", per_cell=1)

    def test_it_refuses_an_existing_pool_name(self):
        job_with_generations(instances_per_pronoun=1, samples=1)
        pool_sample(name="p", per_cell=1)

        with pytest.raises(PoolSampleError, match="already exists"):
            pool_sample(name="p", per_cell=1)


@pytest.mark.django_db
class TestSamplePoolCommand:
    def test_it_samples_from_the_command_line(self, capsys):
        job = job_with_generations(instances_per_pronoun=2, samples=5)

        call_command("sample_pool", "--name", "cli", "--jobs", str(job.pk), "--per-cell", "5", "--seed", "3")

        assert "pool cli: 20 items in 4 cells" in capsys.readouterr().out
        assert PoolItem.objects.filter(pool__name="cli").count() == 20

    def test_it_fails_clearly_on_short_cells(self):
        job = job_with_generations(instances_per_pronoun=1, samples=5)

        with pytest.raises(CommandError, match="too few generations"):
            call_command("sample_pool", "--name", "cli", "--jobs", str(job.pk), "--per-cell", "10")
        assert not Pool.objects.exists()

    def test_it_rejects_malformed_job_ids(self):
        with pytest.raises(CommandError, match="comma-separated job ids"):
            call_command("sample_pool", "--name", "cli", "--jobs", "one,two")
