import pytest

from components.core.text_normalization import normalize_text


@pytest.mark.unit
class TestNormalizeText:
    def test_ligatures_and_full_width_forms_become_plain_letters(self):
        assert normalize_text("The speci\ufb01cation of work\ufb02ows") == "The specification of workflows"
        assert normalize_text("ＡＢＣ－１２３ ﬀ ﬃ") == "ABC-123 ff ffi"

    def test_soft_hyphens_and_zero_width_characters_are_removed(self):
        assert normalize_text("reim\u00adburse\u00adment for ex\u200bpenses\ufeff") == "reimbursement for expenses"

    def test_line_end_hyphenation_is_joined_only_when_asked(self):
        text = "the speci-\nfication and the data-  \n  base"
        assert normalize_text(text, join_line_hyphens=True) == "the specification and the database"
        assert normalize_text(text) == "the speci-\nfication and the data-\n  base"  # indentation is kept

    def test_line_end_hyphen_before_a_capital_digit_or_list_marker_stays(self):
        text = "an e-\nMail, page 12-\n14, item -\n- next"
        assert normalize_text(text, join_line_hyphens=True) == text

    def test_whitespace_is_collapsed_but_indentation_and_paragraphs_kept(self):
        text = "a\t\tb\u00a0\u00a0c   \r\n\r\n\r\n\r\nd  \n    code\u2003x\u2029e"
        assert normalize_text(text) == "a b c\n\nd\n    code x\ne"

    def test_idempotent(self):
        text = "speci\ufb01c  data-\nbase\u00ad\n\n\n\nend"
        once = normalize_text(text, join_line_hyphens=True)
        assert normalize_text(once, join_line_hyphens=True) == once
