from zarrflow._names import closest, unknown_name


def test_closest_finds_a_typo_and_a_case_change():
    dims = ["time", "latitude", "longitude"]
    assert closest("tim", dims) == "time"
    assert closest("LATITUDE", dims) == "latitude"
    assert closest("xyz", dims) is None


def test_unknown_name_lists_the_known_names_and_the_hint():
    msg = unknown_name("dimension", "tim", ["time", "level"])
    assert msg == "unknown dimension 'tim' (did you mean 'time'?; known: time, level)"
    assert unknown_name("variable", "q", []) == "unknown variable 'q' (there are none)"


def test_a_long_list_is_shortened():
    msg = unknown_name("channel", "zz", [f"c{i}" for i in range(30)])
    assert msg.endswith("c11, ...)")
