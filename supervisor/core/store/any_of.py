"""`field__any_of=ids`: membership in a long list of ids, sent as one parameter.

`__in` spells a list as one placeholder per value; with the thousands of ids a
snapshot at size names, psycopg spent longer splitting and quoting the statement than
PostgreSQL took to run it. On PostgreSQL this is `= ANY(%s)` with the list as one
array; elsewhere it is `__in`.
"""

from __future__ import annotations

from django.db.models import Field, ForeignKey, Lookup
from django.db.models.lookups import In


@ForeignKey.register_lookup
@Field.register_lookup
class AnyOf(Lookup):
    lookup_name = "any_of"
    prepare_rhs = False

    def as_sql(self, compiler, connection):
        field = self.lhs.output_field
        if connection.vendor != "postgresql":
            return In(self.lhs, list(self.rhs)).as_sql(compiler, connection)
        lhs, lhs_params = self.process_lhs(compiler, connection)
        values = list(self.rhs)
        if not _plain(field, values):
            values = [field.get_db_prep_value(value, connection) for value in values]
        return f"{lhs} = ANY(%s::{field.cast_db_type(connection)}[])", (*lhs_params, values)


_TEXT = {"CharField", "TextField", "SlugField"}
_WHOLE = {"AutoField", "BigAutoField", "IntegerField", "BigIntegerField"}


def _plain(field, values: list) -> bool:
    """Ids that need no preparing (text for a text column, whole numbers for a key):
    preparing each of thousands cost more than the query they are sent in."""
    kind = field.get_internal_type()
    if kind == "ForeignKey":
        kind = field.target_field.get_internal_type()
    wanted = str if kind in _TEXT else int if kind in _WHOLE else None
    return wanted is not None and all(type(value) is wanted for value in values)
