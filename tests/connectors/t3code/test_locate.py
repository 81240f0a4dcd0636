"""A `db_path` may name T3's state database or the install's directory."""

from supervisor.connectors.t3code.locate import state_database


def test_a_file_is_itself(tmp_path):
    path = tmp_path / "copy.sqlite"
    path.write_bytes(b"")
    assert state_database(str(path)) == str(path)


def test_a_base_directory_of_t3_0_0_30_names_its_state_sqlite(tmp_path):
    (tmp_path / "userdata").mkdir()
    (tmp_path / "userdata" / "state.sqlite").write_bytes(b"")
    assert state_database(str(tmp_path)) == str(tmp_path / "userdata" / "state.sqlite")
    assert state_database(str(tmp_path / "userdata")) == str(tmp_path / "userdata" / "state.sqlite")


def test_where_a_later_build_made_statev2_it_is_the_current_one(tmp_path):
    (tmp_path / "userdata").mkdir()
    for name in ("state.sqlite", "statev2.sqlite"):
        (tmp_path / "userdata" / name).write_bytes(b"")
    assert state_database(str(tmp_path)) == str(tmp_path / "userdata" / "statev2.sqlite")


def test_a_directory_without_a_database_is_left_for_the_follower_to_report(tmp_path):
    assert state_database(str(tmp_path)) == str(tmp_path)


def test_a_home_relative_path_is_expanded(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".t3" / "userdata").mkdir(parents=True)
    (tmp_path / ".t3" / "userdata" / "state.sqlite").write_bytes(b"")
    assert state_database("~/.t3") == str(tmp_path / ".t3" / "userdata" / "state.sqlite")
