"""Builds the example submissions solutions/*.zip (run from this directory: python3 make_zips.py).
Fixed timestamps, so the archives are the same bytes on every run."""
import zipfile

ANSWERS = {"01.out": "2 2 3\n", "02.out": "97\n", "03.out": "2 3 3 5 3607 3803\n"}


def make(path, files):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, text in files.items():
            z.writestr(zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0)), text)


make("solutions/ac.zip", ANSWERS)
make("solutions/missing.zip", {k: v for k, v in ANSWERS.items() if k != "02.out"})
make("solutions/wa.zip", {**ANSWERS, "03.out": "2 3 5 3607 3803\n"})
