"""Report: the comparison's data model, its plain wording, and the JSON, CSV and HTML renderings."""
