"""Public names stay stable (issue 20, item 5): the api keeps every name it has exported, and documents each."""

from __future__ import annotations

import re
from pathlib import Path

from overlap_desktop import api

ROOT = Path(__file__).resolve().parents[2]

#: Every name `overlap_desktop.api` exported before the core was reorganised into stage packages.
#: Removing one breaks users' scripts: add names freely, never drop one without a deprecation.
EXPORTED_BEFORE_THE_SPLIT = frozenset("""
CancelToken Config DISTANCE_SCALE DistanceLevel ExportSummary FileResult GLOSSARY Index IndexSummary
IndexedFile Manifest ManifestFile ManifestStream MergeSummary Progress Report SETTINGS Segment
StreamFingerprints TextNgrams TextOverlapResult Variant VerifyResult annotation_overlap audit_sample
available_readers chance_words check_hashed_overlap compare compare_offers default_demo_dir
describe_flags describe_repeat describe_segment distance_colour distance_words doctor episode_spans_for
export_manifest fingerprint_file format_clock format_date format_duration format_percent frame_at
glossary_tip headline headline_details index_paths inspect_manifest is_clutter judged_unmatched_seconds
keyed_ngram_hashes load_config load_report_json merge_indexes new_footage_sentence open_index
read_manifest repeats_checked report_to_dict run_demo safe_text self_dedupe speed_text speed_words
stream_words text_overlap verify_delivery verify_verdict write_manifest write_report_csv
write_report_html write_report_json write_verify_html write_verify_json
""".split())


def test_every_name_exported_before_is_still_exported_and_resolves() -> None:
    missing = sorted(EXPORTED_BEFORE_THE_SPLIT - set(api.__all__))
    assert not missing, f"overlap_desktop.api no longer exports: {missing}"
    for name in sorted(EXPORTED_BEFORE_THE_SPLIT):
        assert getattr(api, name) is not None, name


def test_every_exported_name_is_documented_in_docs_api_md() -> None:
    doc = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    undocumented = [name for name in api.__all__ if not re.search(rf"(?<![\w]){re.escape(name)}(?![\w])", doc)]
    assert not undocumented, f"docs/api.md does not mention: {undocumented}"
