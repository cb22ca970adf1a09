"""One definition of a job's parameters (generation/parameters.py): the form, the API and `generate` take the same
fields, check the same bounds (overridable in settings) and name the field in every message."""

from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from generation.forms import JobForm
from generation.models import Job
from generation.parameters import JobParameterError, JobParametersSerializer, job_parameters_validate

LIST = "/api/generation-jobs/"
BOUNDS = [
    ("num_beams", 8, "CONCORD_MAX_NUM_BEAMS"),
    ("samples", 20, "CONCORD_MAX_SAMPLES"),
    ("max_new_tokens", 512, "CONCORD_MAX_NEW_TOKENS"),
    ("batch_size", 256, "CONCORD_MAX_BATCH_SIZE"),
]


class TestTheDefinition:
    def test_it_is_the_field_list_of_the_form_the_api_and_the_command(self, smollm2, demo_ruff):
        from generation.apis import JobListCreateApi
        from generation.management.commands.generate import Command

        names = [name for name in JobParametersSerializer().fields if name not in ("kind", "options")]
        assert list(JobForm().fields) == names
        assert JobListCreateApi.InputSerializer is JobParametersSerializer
        parser = Command().create_parser("manage.py", "generate")
        flags = {option for action in parser._actions for option in action.option_strings}
        assert {"--" + name.replace("_", "-") for name in names} <= flags

    @pytest.mark.parametrize(("field", "limit", "setting"), BOUNDS)
    def test_it_refuses_a_value_over_the_bound_naming_the_field_and_the_setting(
        self, smollm2, demo_ruff, field, limit, setting
    ):
        job_parameters_validate(model="smollm2-135m", dataset="demo-ruff", **{field: limit})  # the bound itself is fine
        with pytest.raises(JobParameterError) as caught:
            job_parameters_validate(model="smollm2-135m", dataset="demo-ruff", **{field: limit + 1})
        assert set(caught.value.errors) == {field}
        assert f"to {limit}" in caught.value.errors[field] and setting in caught.value.errors[field]
        assert str(caught.value).startswith(f"{field}: ")

    @pytest.mark.parametrize(("field", "limit", "setting"), BOUNDS)
    def test_each_bound_is_overridable_in_settings(self, smollm2, demo_ruff, settings, field, limit, setting):
        setattr(settings, setting, limit + 10)
        params = job_parameters_validate(model="smollm2-135m", dataset="demo-ruff", **{field: limit + 10})
        assert getattr(params, field) == limit + 10
        setattr(settings, setting, 2)
        with pytest.raises(JobParameterError, match=f"{field}: must be a whole number from 1 to 2"):
            job_parameters_validate(model="smollm2-135m", dataset="demo-ruff", **{field: 3})

    def test_it_refuses_text_the_database_cannot_hold_and_fields_it_does_not_know(self, smollm2, demo_ruff):
        with pytest.raises(JobParameterError) as caught:
            job_parameters_validate(model="smollm2\x00", dataset="demo-ruff\ud800", pronouns=["he\ud800"])
        assert set(caught.value.errors) == {"model", "dataset", "pronouns"}
        with pytest.raises(JobParameterError, match="beams: not a job parameter"):
            job_parameters_validate(model="smollm2-135m", dataset="demo-ruff", beams=2)

    def test_the_batch_size_caps_the_chunks(self, smollm2, demo_ruff):
        from generation.jobs.services import job_create

        job = job_create(model="smollm2-135m", dataset="demo-ruff", batch_size=1, queue=False)
        assert job.batch_size == 1 and {len(c.unit_ids) for c in job.chunks.all()} == {1}


class TestEveryEntrance:
    def test_the_api_answers_400_naming_the_field(self, api, admin_user, smollm2, demo_ruff):
        api.force_authenticate(admin_user)
        response = api.post(LIST, {"dataset": "demo-ruff", "num_beams": 1000, "samples": 21}, format="json")
        assert response.status_code == 400
        body = response.json()
        assert set(body) == {"num_beams", "samples"} and "CONCORD_MAX_NUM_BEAMS" in body["num_beams"][0]
        assert Job.objects.count() == 0

    def test_the_api_refuses_a_lone_surrogate_in_pronouns(self, api, admin_user, smollm2, demo_ruff):
        api.force_authenticate(admin_user)
        raw = '{"dataset": "demo-ruff", "pronouns": ["\\ud800"]}'
        response = api.post(LIST, raw, content_type="application/json")
        assert response.status_code == 400  # the JSON parser or the definition refuses it; either way, a 4xx
        assert Job.objects.count() == 0

    def test_the_command_fails_naming_the_field(self, smollm2, demo_ruff):
        with pytest.raises(CommandError, match="num_beams: must be a whole number from 1 to 8"):
            call_command("generate", "--dataset=demo-ruff", "--num-beams=1000", stdout=StringIO(), stderr=StringIO())
        assert Job.objects.count() == 0

    def test_the_form_shows_the_message_under_the_field(self, client, admin_user, smollm2, demo_ruff):
        client.force_login(admin_user)
        data = {"model": "smollm2-135m", "dataset": "demo-ruff", "pronouns": ["he"], "settings": ["pre"]}
        data |= {"samples": 1, "max_new_tokens": 600, "top_k": 5, "top_p": 0.9, "num_beams": 9, "seed": 0}
        response = client.post(reverse("generation-job-new"), data)
        assert response.status_code == 200
        errors = response.context["form"].errors
        assert set(errors) == {"max_new_tokens", "num_beams"}
        assert "from 1 to 512" in errors["max_new_tokens"][0] and "from 1 to 8" in errors["num_beams"][0]
        assert Job.objects.count() == 0
