"""Credential contexts in other languages and scripts: a key named `senha`, `wachtwoord`, `hasło`,
`пароль`, `密码` or `كلمة_المرور` is a password's, and `api_ключ` or `密钥` a key's, with full-width
separators and JSON escapes too; a translated label, a localized placeholder and CJK prose after
such a key are no secret."""

from __future__ import annotations

import pytest

from reverie.redact.keys import classify_key


PW = "K2F9cX3KwRiUUi39"

FOUND = [
    ("const senha = '{}';", "password"),
    ("[database]\nparola_d_ordine = {}\n", "password"),
    ('wachtwoord = "{}"', "password"),
    ("$hasło = '{}';", "password"),
    ('      DATABAS_LOSENORD: "{}"', "password"),
    ('private const string şifre = "{}";', "password"),
    ('const пароль = "{}"', "password"),
    ('    "κωδικός": "{}"', "password"),
    ('密码 = "{}"  # 临时密码', "password"),
    ("mật_khẩu = {}", "password"),
    ('    "كلمة_المرور": "{}"', "password"),
    ('  סיסמה: "{}"', "password"),
    ('    const val api_ключ = "{}"', "api_key"),
    ("源数据库密码＝{}", "password"),
    ('{{"usuario":"fact_api","contrase\\u00f1a":"{}"}}', "password"),
]


@pytest.mark.parametrize("template,label", FOUND)
def test_a_key_of_another_language_is_a_credential_context(redactor, template, label):
    out = redactor.redact(template.format(PW))
    assert out.text == template.format(f"[REDACTED:{label}]")


def test_a_quoted_passphrase_after_such_a_key_goes(redactor):
    text = 'contraseña = "mi perro come 0cpn68 los martes"'
    assert redactor.redact(text).text == 'contraseña = "[REDACTED:password]"'
    # up to twelve words between its quotes (`restic`'s passphrases are sentences)
    text = 'contraseña = "mi perro come 0cpn68 los martes por la tarde"'
    assert redactor.redact(text).text == 'contraseña = "[REDACTED:password]"'


KEPT = [
    # translated labels and messages
    '{\n  "password": "كلمة المرور",\n  "forgot_password": "نسيت كلمة المرور؟"\n}',
    "<?php return [\n    'password'     => 'Mật khẩu',\n    'mat_khau_moi' => 'Mật khẩu mới',\n];",
    '{\n  "sifre": "Şifre",\n  "sifre_tekrar": "Şifre (tekrar)",\n  "sifremi_unuttum": "Şifremi unuttum"\n}',
    "login.passwort=Passwort\nfehler.passwort.falsch=Benutzername oder Passwort ist falsch.\n",
    # placeholders in other languages
    'MARIADB_PASSWORD: ihr-passwort\ncontraseña = "tu-contraseña"\nпароль: ваш_пароль\nパスワード = あなたのパスワード\n',
    # CJK prose after a password's word
    "- 🔑 密码管理：支持环境变量和系统密钥环\n        # 有密码：尝试在线获取\n",
    # no credential word at all
    "ten_dang_nhap = ketoan\nBenutzername = admin\n",
    # a label JSON-escaped (its `\\u00f1` holds digits, the label none), a message of many words
    '{"contrase\\u00f1a":"Contrase\\u00f1a","olvid\\u00e9_contrase\\u00f1a":"\\u00bfOlvidaste tu contrase\\u00f1a?"}',
    'contraseña = "La contraseña debe tener al menos ocho caracteres y un número"',
]


@pytest.mark.parametrize("text", KEPT)
def test_labels_placeholders_and_prose_stay(redactor, text):
    out = redactor.redact(text)
    assert (out.text, out.findings) == (text, [])


def test_the_words_classify_in_any_case_and_inside_longer_keys():
    assert [classify_key(k) for k in ("SENHA", "db_wachtwoord", "Пароль", "源数据库密码", "APIキー", "ten_dang_nhap")] == [
        ("pw", "password"), ("pw", "password"), ("pw", "password"), ("pw", "password"), ("secret", "api_key"), None]


def test_a_pasted_password_in_a_sentence_is_no_bundle_message(redactor):
    """A bundle's message is a key at the line's start and words; `KEY=value` pasted inside a
    sentence that ends with a period keeps the credential-context rule (the issue's own example)."""
    text = ("The deploy is failing. DB_PASSWORD=hunter2-Xq9-Mv77 and the connection string is set. "
            "Check the .env file too.\nDB_PASSWORD=hunter2-Xq9-Mv77 and the rest of it.\n")
    assert redactor.redact(text).text == (
        "The deploy is failing. DB_PASSWORD=[REDACTED:password] and the connection string is set. "
        "Check the .env file too.\nDB_PASSWORD=[REDACTED:password] and the rest of it.\n")
