"""Vendored front-end files: each folder of static/vendor has its licence and a line in
VERSIONS saying which package and version it is; Swagger UI's bundle is that version."""

import re
from pathlib import Path

import pytest

VENDOR = Path(__file__).resolve().parents[2] / "static" / "vendor"
FOLDERS = sorted(p for p in VENDOR.iterdir() if p.is_dir())


def versions() -> dict[str, str]:
    """VERSIONS' lines, "package X.Y.Z (how it was fetched), files": package -> version."""
    lines = (VENDOR / "VERSIONS").read_text().splitlines()
    return dict(re.match(r"(\S+) (\d+\.\d+\.\d+) \(npm pack ", line).groups() for line in lines)


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
def test_every_vendored_folder_has_its_licence_and_a_versions_line(folder):
    assert (folder / "LICENSE").stat().st_size > 500, folder
    # The folder is named for its npm package (htmx for htmx.org, swagger-ui for -dist).
    named = [package for package in versions() if package.startswith(folder.name)]
    assert named, f"{folder.name} has no line in static/vendor/VERSIONS"


def test_swagger_ui_is_the_version_its_notes_say():
    version = versions()["swagger-ui-dist"]
    bundle = (VENDOR / "swagger-ui" / "swagger-ui-bundle.js").read_text()
    assert f'PACKAGE_VERSION:"{version}"' in bundle
    readme = (VENDOR / "swagger-ui" / "README").read_text()
    assert f"swagger-ui-dist@{version}" in readme
    assert "SmartBear" in (VENDOR / "swagger-ui" / "NOTICE").read_text()  # Apache-2.0 §4(d)
