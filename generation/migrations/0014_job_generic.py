from django.db import migrations


class Migration(migrations.Migration):
    # Every migration that names the old model runs before the rename (demo's says so itself: the app is optional).
    dependencies = [
        ("generation", "0013_dataset_upload_imports"),
        ("analysis", "0001_initial"),
        ("annotation", "0001_initial"),
        ("judging", "0004_imported_judges"),
    ]

    operations = [migrations.RenameModel("GenerationJob", "Job")]
