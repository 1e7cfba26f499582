"""Result: one kprof answer as a pandas DataFrame and as the JSON document it was made from."""


def _lookup(document, path):
    """document["a"]["b"] for the path "a.b"."""
    value = document
    for key in path.split("."):
        value = value[key]
    return value


# The fields that say which kernel, group, step or op a row is.
_NAMING_COLUMNS = ("launch", "target", "kernel", "index", "name", "stage")


def frame(records):
    """A DataFrame with one row per JSON object of RECORDS.

    Columns are the objects' field names, as kprof's JSON spells them (units in the name:
    total_us, wall_clock_us, share_of_gpu_time, ...). A nested object's fields become columns
    named by their path (trace diff's before.mean_us, analyze's expected_bottleneck.expected);
    lists (grid, block, a step's devices) stay lists in their cell. JSON null is NaN in a
    numeric column and None elsewhere: a figure kprof could not derive is never 0. The naming
    columns (launch, target, kernel, index, name, stage) come first, the others in the JSON's order.
    """
    import pandas  # here, not at the top: `import kprof` and find_binary() work without pandas

    df = pandas.json_normalize(records, sep=".")
    # An object that is null in some rows leaves an empty column of its own beside its fields'.
    df = df.drop(columns=[c for c in df.columns
                          if df[c].isna().all() and any(d.startswith(c + ".") for d in df.columns)])
    # kprof's JSON orders fields alphabetically; what names a row comes first.
    leading = [c for c in _NAMING_COLUMNS if c in df.columns]
    return df[leading + [c for c in df.columns if c not in leading]]


class Result:
    """What one kprof verb answered.

    df: the DataFrame of the answer's rows (the `rows` list of the JSON document, see frame()).
    json: the whole JSON document (dict), exactly as kprof printed it; its `schema` names the
        format (docs/kprof.*.schema.json in kprof's sources).
    rows: the path of df's rows within json, e.g. "kernels" or "fix_list.opportunities".
    argv: the command line that was run; stderr: kprof's warnings and notes (empty when none).

    A notebook displays a Result as its DataFrame. Other lists of the document are tables too:
    result.table("stages"), result.table("devices").
    """

    def __init__(self, document, rows, argv, stderr):
        self.json = document
        self.rows = rows
        self.argv = argv
        self.stderr = stderr
        self.df = frame(_lookup(document, rows))

    def table(self, path):
        """The list at PATH ("stages", "devices", "fix_list.opportunities") as a DataFrame."""
        records = _lookup(self.json, path)
        if not isinstance(records, list):
            raise TypeError(f"{path} is not a list in {self.json.get('schema')}")
        return frame(records)

    def __len__(self):
        return len(self.df)

    def __repr__(self):
        return f"kprof.Result({self.json.get('schema')}, {len(self.df)} {self.rows})\n{self.df!r}"

    def _repr_html_(self):
        return self.df._repr_html_()
