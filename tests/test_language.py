"""The language detector (toolrag.language) and BM25's reading of other languages (toolrag.index.tokenize):
issue 43. The real detector and stemmers, no stand-ins."""

from __future__ import annotations

import sys

import pytest

from toolrag.index.tokenize import tokenize
from toolrag.language import LANGUAGE_NAMES, MEASURED, UNDETERMINED, detect_language
from toolrag.text import is_mostly_cjk

SENTENCES = {
    "en": ["book a meeting room for six people tomorrow at 3pm", "how many vacation days do I have left?",
           "order me a large pepperoni pizza", "M-1017 stock in Suzhou"],
    "zh": ["帮我报销这张餐饮发票", "下周二上午十点给产品组发个会议邀请，带 Teams 链接", "查一下 M-1017 的库存"],
    "ja": ["パスワードをリセットしてください", "明日の午前10時にTomとの30分の会議を設定して",
           "杭州の天気はどうですか？"],
    "ko": ["내 남은 연차 일수를 알려줘", "내일 오전 10시에 Tom과 30분 회의를 잡아 줘", "항저우 날씨 어때?"],
    "ru": ["Забронируй переговорную на завтра в 15:00 на 6 человек", "Какая погода в Ханчжоу?",
           "Найди все строки ERROR от payment-svc в prod за последние 30 минут"],
    "es": ["¿Cuántos días de vacaciones me quedan?", "Necesito una sala de reuniones para 6 personas mañana",
           "Busca la política de retención de datos"],
    "de": ["Wie viele Urlaubstage habe ich noch?", "Ich brauche morgen einen Besprechungsraum für 6 Personen",
           "Erzähl mir einen Witz über Buchhalter"],
    "fr": ["Combien de jours de congés me reste-t-il ?", "Il me faut une salle de réunion pour 6 personnes demain",
           "Quelle est la capitale de l'Australie ?"],
    "pt": ["Quantos dias de férias ainda tenho?", "Preciso de uma sala de reunião para 6 pessoas amanhã",
           "Qual é a capital da Austrália?"],
    "vi": ["Tôi còn bao nhiêu ngày nghỉ phép?", "Cần một phòng họp cho 6 người ngày mai",
           "Thủ đô của Úc là gì?"],
    "th": ["จองห้องประชุมพรุ่งนี้บ่ายสามโมง"],
    "hi": ["कल दोपहर तीन बजे मीटिंग रूम बुक करो"],
    "ar": ["احجز غرفة اجتماعات غدا الساعة الثالثة"],
}


@pytest.mark.parametrize(("lang", "text"), [(lang, t) for lang, texts in SENTENCES.items() for t in texts])
def test_the_detector_names_each_language(lang: str, text: str) -> None:
    assert detect_language(text) == lang


@pytest.mark.parametrize("text", ["", "   ", "M-1017", "12:30 / 4,500", "🙂👍"])
def test_a_text_without_words_is_undetermined(text: str) -> None:
    assert detect_language(text) in (UNDETERMINED, "en")
    assert detect_language("12:30 / 4,500") == UNDETERMINED


def test_chinese_is_exactly_what_the_english_model_skipped_before() -> None:
    """Every Chinese path (gloss, jieba, the clarifying question in Chinese) reads the same texts as before."""
    for text in ["帮我锁一下 5 楼带视频会议设备的房间", "请用 query_stock 查 SKU-1001 在上海仓的库存",
                 "summarise 这份 PDF", "book 会议室 for 3pm tomorrow with the sales team please"]:
        assert (detect_language(text) == "zh") == is_mostly_cjk(text)


def test_every_measured_language_has_a_name() -> None:
    assert set(MEASURED) <= set(LANGUAGE_NAMES)


@pytest.mark.parametrize(("a", "b"), [
    ("Забронируй переговорную на завтра", "Свободна ли переговорная комната?"),   # accusative / nominative
    ("Покажи мои отпуска за год", "сколько дней отпуска осталось у сотрудника"),   # plural / genitive
    ("Necesito reservar una sala de reuniones", "reunión semanal del equipo de ventas"),  # plural / accent
    ("Quiero ver mis vacaciones pendientes ahora", "Consultar el saldo de vacación"),
])
def test_inflections_meet_in_one_stem(a: str, b: str) -> None:
    assert set(tokenize(a)) & set(tokenize(b)) - {"de", "del", "el", "la"}


def test_russian_and_spanish_stems() -> None:
    assert "переговорн" in tokenize("Забронируй переговорную на завтра")
    assert "переговорн" in tokenize("Свободна ли переговорная комната?")
    assert "reunion" in tokenize("Necesito una sala de reuniones para mañana")
    assert "reunion" in tokenize("la reunión de mañana con el equipo")


def test_japanese_korean_and_thai_become_character_bigrams() -> None:
    ja = tokenize("会議室を予約してください")
    assert {"会議", "議室", "予約"} <= set(ja)
    ko = tokenize("회의실을 예약해 줘")
    assert {"회의", "의실", "예약"} <= set(ko)
    assert tokenize("회의실") == ["회의", "의실"] and tokenize("방") == ["방"]
    assert "ประชุม"[:2] in tokenize("จองห้องประชุม")
    # a Korean request meets a Korean tool through the word it shares, whatever particle is glued to it
    assert set(tokenize("회의실 예약")) <= set(tokenize("회의실을 예약합니다")) | {"약"}


def test_english_and_chinese_tokens_are_as_before() -> None:
    assert tokenize("claim my travel expenses getWeatherV2") == ["claim", "travel", "expense", "get", "weather", "v2"]
    assert tokenize("Edit Order") == ["edit", "order"]
    assert tokenize("lines Order lines.") == ["line", "order", "line"]
    assert tokenize("帮我发邮件") == ["邮件", "发邮件"]


def test_stemming_from_many_threads_gives_the_stems_of_one() -> None:
    """A Snowball stemmer holds the word it works on: searches in several threads must not mix their words."""
    from concurrent.futures import ThreadPoolExecutor

    from toolrag.index import tokenize as tk

    words = [f"{w}{s}" for w in ("переговорн", "отпуск", "заявк", "сотрудник") for s in ("ая", "ую", "ой", "ами", "ов")]
    stem = tk._stemmer("ru").__wrapped__  # past the remembered stems: every call stems
    expected = {w: stem(w) for w in words}
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads switch often: unlocked, this raised IndexError inside snowballstemmer
    try:
        with ThreadPoolExecutor(8) as pool:
            for _ in range(20):
                assert list(pool.map(stem, words * 10)) == [expected[w] for w in words * 10]
    finally:
        sys.setswitchinterval(interval)


def test_the_english_model_reads_a_bilingual_tool_through_its_english_words() -> None:
    """``toolrag.text.english_segments``: a Chinese description with an English name, tags and example is read
    through those (the tool is then scored by the English model, and its language matches an English request); a
    Chinese tool with an English name alone is not read (too few words); an English text is read whole."""
    from toolrag.index.text_sync import tool_text
    from toolrag.text import english_segments

    bilingual = ("add contact from business card: 识别名片中的姓名、职位和公司，并保存为联系人。\n"
                 "Tags: 名片, 联系人, business card, CRM.\nscan this business card and add him to the CRM as a lead\n"
                 "把这张名片存到通讯录")
    assert english_segments(bilingual) == ("add contact from business card\nTags, business card, CRM.\n"
                                           "scan this business card and add him to the CRM as a lead")
    assert english_segments("get weather: 查询城市的天气和气温。\nTags: 天气, 气温.") == ""
    english = "Send an email: to one or more people.\nTags: 邮件, email."
    assert english_segments(english) == english
    # what the index embeds for each text model, and whether the English model scores the tool at all
    assert tool_text("dense_en", bilingual) == english_segments(bilingual)
    assert tool_text("dense", bilingual) == bilingual
    assert tool_text("dense_en", "查询天气：城市的天气和气温") == ""
