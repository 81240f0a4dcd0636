"""The README's examples work on a clone alone: the files they post and replay are the
project's own, and the first `curl` gets the answer the README prints."""

import json
import re

import pytest

from tests.support.scenarios import ROOT

README = (ROOT / "README.md").read_text()
MAKEFILE = (ROOT / "Makefile").read_text()


def test_every_file_a_curl_example_posts_is_in_the_clone():
    posted = re.findall(r"--data-binary @(\S+)", README)
    assert posted, "the README lost its curl example"
    missing = [path for path in posted if not (ROOT / path).resolve().is_relative_to(ROOT)]
    missing += [path for path in posted if not (ROOT / path).is_file()]
    assert not missing, f"README curl examples post files a clone lacks: {missing}"


def test_make_replay_replays_files_of_the_clone():
    recipe = re.search(r"^replay:.*\n\t(.+)$", MAKEFILE, re.MULTILINE).group(1)
    patterns = [word for word in recipe.split() if word.endswith(".json")]
    assert patterns
    for pattern in patterns:
        assert not pattern.startswith(".."), f"make replay reads {pattern} from beside the clone"
        assert list(ROOT.glob(pattern)), f"make replay's {pattern} matches nothing"


@pytest.mark.django_db
def test_the_first_curl_example_gets_the_answer_the_readme_prints(client, source):
    example = re.search(
        r"curl -sS -X POST \S+/api/v1/events .*?--data-binary @(\S+)\n# (\{[^\n]*\})", README, re.S
    )
    path, printed = example.group(1), json.loads(example.group(2))
    response = client.post(
        "/api/v1/events",
        (ROOT / path).read_bytes(),
        content_type="application/json",
        headers={"Authorization": f"Bearer {source.token}"},
    )
    assert response.status_code == 200
    assert response.json() == printed
