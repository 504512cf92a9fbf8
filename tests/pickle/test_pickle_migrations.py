"""Schema evolution: versions, migrations, defaults and unknown fields."""

import dataclasses

import pytest
from bytewright import pickle


def record_of(cls_v1, value):
    """Dump `value` as a record of the class `cls_v1` stands for."""
    return pickle.dumps(value)


def make(version, **fields_and_defaults):
    ns = {"__bytewright_version__": version, "__annotations__": {}}
    for name, default in fields_and_defaults.items():
        ns["__annotations__"][name] = object
        if default is not None:
            ns[name] = default
    cls = type("User", (), ns)
    cls.__module__ = "app"
    cls.__qualname__ = "User"
    return dataclasses.dataclass(cls)


def test_migration_chain_runs_before_build():
    v1 = make(1, name=None)
    data = pickle.dumps(v1(name="Ada Lovelace"))
    v3 = make(3, first=None, last=None, admin=False)

    @pickle.migrate(v3, from_version=1, to_version=2)
    def split(fields):
        first, last = fields.pop("name").split(" ")
        return {**fields, "first": first, "last": last}

    @pickle.migrate(v3, from_version=2, to_version=3)
    def add_admin(fields):
        return {**fields, "admin": True}

    back = pickle.loads(data, classes=[v3])
    assert type(back) is v3
    assert (back.first, back.last, back.admin) == ("Ada", "Lovelace", True)


def test_missing_migration_says_how_to_register_it():
    data = pickle.dumps(make(1, name=None)(name="x"))
    v2 = make(2, name=None)
    with pytest.raises(pickle.UnpicklingError, match=r"pickle\.migrate\(User, from_version=1"):
        pickle.loads(data, classes=[v2])


def test_newer_record_than_class_is_rejected():
    data = pickle.dumps(make(5, name=None)(name="x"))
    with pytest.raises(pickle.UnpicklingError, match="newer"):
        pickle.loads(data, classes=[make(1, name=None)])


def test_missing_fields_take_defaults():
    data = pickle.dumps(make(1, name=None)(name="x"))
    v1b = make(1, name=None, tags=dataclasses.field(default_factory=list), n=7)
    back = pickle.loads(data, classes=[v1b])
    assert (back.name, back.tags, back.n) == ("x", [], 7)


def test_missing_field_without_default_is_an_error():
    data = pickle.dumps(make(1, name=None)(name="x"))
    with pytest.raises(pickle.UnpicklingError, match="lacks the field 'age'"):
        pickle.loads(data, classes=[make(1, name=None, age=None)])


def test_unknown_fields_raise_unless_allowed():
    data = pickle.dumps(make(1, name=None, age=None)(name="x", age=3))
    strict = make(1, name=None)
    with pytest.raises(pickle.UnpicklingError, match=r"unknown fields \['age'\]"):
        pickle.loads(data, classes=[strict])
    lenient = make(1, name=None)
    lenient.__bytewright_allow_extra__ = True
    back = pickle.loads(data, classes=[lenient])
    assert back.name == "x" and not hasattr(back, "age")


def test_migration_must_return_a_dict():
    data = pickle.dumps(make(1, name=None)(name="x"))
    v2 = make(2, name=None)
    pickle.migrate(v2, from_version=1, to_version=2)(lambda fields: None)
    with pytest.raises(pickle.UnpicklingError, match="not a dict"):
        pickle.loads(data, classes=[v2])


def test_migrate_validates_its_arguments():
    with pytest.raises(ValueError):
        pickle.migrate(int, from_version=2, to_version=1)
    with pytest.raises(TypeError):
        pickle.migrate(int, from_version="1", to_version=2)  # type: ignore[arg-type]


def test_migrated_fields_may_not_be_dunder():
    data = pickle.dumps(make(1, name=None)(name="x"))
    v2 = make(2, name=None)
    pickle.migrate(v2, from_version=1, to_version=2)(lambda f: {**f, "__class__": int})
    with pytest.raises(pickle.UnpicklingError, match="bad field"):
        pickle.loads(data, classes=[v2])


def test_version_is_recorded_per_record():
    data = pickle.dumps(make(4, name=None)(name="x"))
    assert pickle.loads(data, classes=[make(4, name=None)]).name == "x"


def test_keyboard_interrupt_in_a_migration_is_not_disguised():
    data = pickle.dumps(make(1, name=None)(name="x"))
    v2 = make(2, name=None)

    def interrupted(fields):
        raise KeyboardInterrupt

    pickle.migrate(v2, from_version=1, to_version=2)(interrupted)
    with pytest.raises(KeyboardInterrupt):
        pickle.loads(data, classes=[v2])


def test_an_exception_in_a_migration_becomes_unpickling_error_with_cause():
    data = pickle.dumps(make(1, name=None)(name="x"))
    v2 = make(2, name=None)

    def broken(fields):
        raise ValueError("boom")

    pickle.migrate(v2, from_version=1, to_version=2)(broken)
    with pytest.raises(pickle.UnpicklingError, match="boom") as info:
        pickle.loads(data, classes=[v2])
    assert isinstance(info.value.__cause__, ValueError)
