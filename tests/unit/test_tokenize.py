from kioku.search.tokenize import has_cjk, normalize, tokenize


def test_normalize_folds_width_and_case() -> None:
    assert normalize("ＫＩＯＫＵ Memory") == "kioku memory"


def test_english_words_are_stemmed_and_stopwords_dropped() -> None:
    assert tokenize("The memories of running") == ["memori", "run"]


def test_tokyo_metropolis_shares_a_token_with_tokyo() -> None:
    assert "東京" in tokenize("東京都に住んでいます")
    assert tokenize("東京") == ["東京"]


def test_halfwidth_katakana_matches_fullwidth() -> None:
    assert tokenize("ｶﾀｶﾅ") == tokenize("カタカナ")


def test_spelling_variants_meet_on_the_normalized_form() -> None:
    assert tokenize("シュミレーション") == tokenize("シミュレーション")


def test_particles_and_punctuation_are_dropped() -> None:
    tokens = tokenize("私は、猫が好きです。")
    assert "は" not in tokens and "が" not in tokens and "、" not in tokens
    assert "猫" in tokens


def test_mixed_script_text_keeps_latin_words() -> None:
    tokens = tokenize("iPhoneを買った")
    assert "iphon" in tokens and "買う" in tokens


def test_very_long_japanese_text_is_chunked_not_refused() -> None:
    text = "東京都の天気は晴れです。" * 20_000  # ~240k chars, far above Sudachi's input cap
    tokens = tokenize(text)
    assert tokens.count("東京") == 20_000


def test_tokens_contain_only_letters_and_digits() -> None:
    for token in tokenize("C++ と C# の違い、email@example.com・ver.2"):
        assert token.isalnum(), token


def test_empty_and_symbol_only_text_gives_no_tokens() -> None:
    assert tokenize("") == []
    assert tokenize("  !!! ... ") == []


def test_has_cjk() -> None:
    assert has_cjk("abc漢字")
    assert not has_cjk("plain ascii")


def test_numbers_inside_symbols_survive_in_japanese_text() -> None:
    # NFKC turns ¼ into "1⁄4", which Sudachi tags as a symbol; the digits are still words, as
    # they are in Latin-only text (found by the tokenizer property test: 'ｶ' + ' ' + '¼').
    assert tokenize("東京 ¼ マイル") == ["東京", "1", "4", "マイル"]
    assert tokenize("ｶ ¼") == tokenize("ｶ") + tokenize("¼")
    assert tokenize("東京、。「」") == ["東京"]
