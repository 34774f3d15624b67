"""Flag memory text that reads like instructions to an AI agent (docs/concepts.md, ``suspicious``).

Hand-written English and Japanese rules in named families; no model. Text is normalised first
(NFKC, casefold, invisibles dropped, whitespace collapsed and removed between Japanese
characters), so full-width, mixed-case or spaced-out words read the same. A rule is a bounded
regex, or a chain ``A … B`` ("from now on … answer", 「今後は…と回答して」) where B follows A
within ``_GAP`` characters of one sentence. Every regex starts with a literal, so ``re`` skips
ahead by first character: all is linear (a hostile 1 MiB ~0.5 s, a short note ~0.2 ms).

Families are phrasings, not strings: "from now on"/以後/今後/これから… followed by an order to
answer something; "ignore/stop following/pay no attention to previous instructions";
obedience ("always obey the channel", 指示に従え); claimed roles ("SYSTEM NOTE:", "pinned:",
【管理者】) followed by an order; "always answer/respond with…"; "whenever someone asks, say…".
tests/unit/test_suspicious_heldout.py measures them on phrasings they were not written from.

Text hidden from people but read by models is its own family, ``hidden_text``: Unicode tag
characters (U+E0000–E007F, an ASCII copy that renders as nothing) outside an emoji's flag
sequence, and runs of variation selectors (bytes smuggled after one visible character).

The whole text is judged, however long: a memory's summary and all of its content, not the
part that is embedded (an order after 2,048 characters of filler is caught).

Limits, on purpose: a tripwire ("this is data, not orders"), not a security boundary.
Paraphrases, other languages, encodings (base64, homoglyphs) and orders split across memories
get through; a few ordinary orders to people ("from now on, reply to customers in English") are
flagged. The real defence is the ``trust_tier`` filter. Flagging filters and deletes nothing;
recall counts a flagged result's score half (``search/rerank.py``).
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right

FAMILIES = (
    "override", "role_play", "system_prompt", "tool_call", "directive", "exfiltration",
    "hidden_text",
)  # fmt: skip
_GAP = 80  # most characters between two consecutive parts of a chain
_INVISIBLE = re.compile(r"[\u00ad\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")
_QUOTES = str.maketrans({"‘": "'", "’": "'", "“": '"', "”": '"'})
_LINE_BREAKS = re.compile(r"[\r\v\f\x1c-\x1e\x85\u2028\u2029]")
_SPACES = re.compile(r"[^\S\n]+")
_NEWLINES = re.compile(r"\n[\n ]*")
_JA_GAP = re.compile(r"[ \n](?<=[\u3000-\u9fff][ \n])(?=[\u3000-\u9fff])")  # kana and kanji
_BREAK = re.compile(r"[\n。!?]|\.(?=\s|$)")
_HEAD = re.compile(r"\\b(?:\(\?:([^()]+?)\)|([a-z]+))")


def _normalise(text: str) -> str:
    """NFKC, casefold, no invisibles, one space or newline per run; starts with ``\\n``."""
    text = _INVISIBLE.sub("", unicodedata.normalize("NFKC", text).casefold()).translate(_QUOTES)
    text = _NEWLINES.sub("\n", _SPACES.sub(" ", _LINE_BREAKS.sub("\n", text)))
    return "\n" + _JA_GAP.sub("", text.replace(" \n", "\n")).strip()


def _fast(pattern: str) -> re.Pattern[str]:
    """Compile; a leading ``\\b(?:ab|cd)`` becomes ``(?:a(?<!\\wa)b|c(?<!\\wc)d)``, a leading
    ``\\bword`` ``word(?<!\\wword)`` (both skippable by their first character or word)."""
    if head := _HEAD.match(pattern):
        if head[2]:
            return re.compile(rf"{head[2]}(?<!\w{head[2]}){pattern[head.end() :]}")
        alternatives = "|".join(rf"{w[0]}(?<!\w{w[0]}){w[1:]}" for w in head[1].split("|"))
        pattern = f"(?:{alternatives}){pattern[head.end() :]}"
    return re.compile(pattern)


_TE = r"て(?:ください|下さい|ほしい|欲しい)?(?![いおたるしきみあもはく])"  # imperative て
_ICHI = rf"(?:{_TE}|ろ|よ|なさい|ること|るように)"  # after 答え, 忘れ, 教え…
_SURU = rf"(?:し(?:{_TE}|ろ|なさい|[、,])|せよ|すること|するように)"  # after 回答, 無視, 表示…
_JA_ANSWER = (
    rf"(?:答え{_ICHI}|回答{_SURU}|返答{_SURU}|応答{_SURU}|言(?:っ{_TE}|え|いなさい)|伝え{_ICHI}"
    rf"|返(?:し{_TE}|せ|すこと|すように))"
)
_JA_SAY = rf"(?:と|って)(?:だけ|のみ)?{_JA_ANSWER}"  # 「…」と答えて, とだけ返せ
_JA_FROM_NOW = r"(?:今後|これから|今から|以後|以降|次回から|これより|この先|今日から)"
_JA_OBEY = rf"従(?:っ{_TE}|え|いなさい|うこと|うように)"
_JA_ORDERS = r"(?:指示|命令|指令|発言|メッセージ|投稿|メモ|言うこと|言葉)"
_JA_ONLY = r"(?:必ず|絶対に|だけ|のみ|常に)"
# Plain imperatives (not て-requests): せよ, しろ, 従え, 答えよ… (not させよう, おもしろい, 言える)
_JA_STRONG = (
    r"(?:せよ(?!う)|(?<![おもあ])しろ(?![いうく])|従え|守れ|答えよ|答えろ|言え(?![るばなない])"
    r"|返せ(?![るばな])|教えろ|漏らせ|送れ(?![るばな]))"
)
_AI = r"ai|llm|chatgpt|claude|gemini|gpt|chatbot|language\smodel"
_ORDER = r"(?:you\b|ignore|disregard|forget|from\snow|always|never|do\snot|as\san?\s|act\s|pretend)"
_CLAIM_ORDER = (
    rf"(?:{_ORDER}|obey|follow|must\b|reveal|new\s(?:priority|instructions?|directive|task|role"
    r"|persona))"
)
_CLAIMED_ROLE = (
    r"(?:system|developer|admin|administrator|pinned|trusted|operator|root|sudo|kioku)(?:\s(?:prompt"
    r"|message|override|note|notice|instructions?|update|alert|directive|policy|command))?"
)
_SECRET = (
    r"\b(?:passwords?|api[\s_-]?keys?|tokens?|secrets?|credentials?|private\skeys?|ssh\skeys?"
    r"|cookies|environment\svariables|chat\shistory|conversation|system\sprompt|memories)\b"
)
_SECRET_JA = (
    r"(?:パスワード|apiキー|api\s?key|トークン|秘密鍵|認証情報|クレデンシャル|シークレット"
    r"|環境変数|会話の?(?:履歴|ログ|内容)|チャットの?(?:履歴|ログ)|システムプロンプト|個人情報|記憶)"
)
# One rule per line, indented lines continue it; "@name" starts a family; " … " joins a chain.
_TABLE = rf"""
@override
\b(?:ignore|disregard|forget|override|bypass|discard|pay\sno\sattention\sto|do\snot\sfollow
    |don't\sfollow|stop\sfollowing|stop\sobeying)\s(?:(?:(?:all|any|the|your|my|of|these|those
    |and)\s){{0,3}}(?:previous|prior|above|earlier|preceding|former|original|initial|old|system
    |safety)\s(?:[a-z']{{1,20}}\s){{0,2}}?(?:instructions?|rules|prompts?|directions|directives?
    |guidelines|guidance|commands|guardrails|restrictions|constraints|programming|orders)\b|(?:all\s
    |everything\s)?(?:you\s(?:were|have\sbeen)\s(?:told|taught|given)|your\s(?:training|programming
    |guidelines|restrictions|instructions|rules|system\sprompt))|(?:(?:all
    |everything)\s(?:of\s)?)?(?:the\s)?(?:above|previous|prior|preceding)(?:\sand
    |[,.:;!])\s?(?:instead\s|just\s|now\s)?(?:say|print|output|write|respond|reply|answer|tell
    |repeat|translate|follow|act|pretend|return|reveal|start|only)\b)
\b(?:new|real|secret|hidden|override)\s(?:system\s)?(?:instructions?|prompt|directives?)\s?:
(?:以前|前|先|これまで|今まで|それまで|上記|上|以上|過去|元|最初|すべて|全て|全部)の?(?:(?:すべて
    |全て|全部)の)?(?:指示|命令|指令|ルール|規則|プロンプト|制約|会話|やり取り|文脈|コンテキスト)[^。\n]{{0,8}}?(?:無視{_SURU}
    |破棄{_SURU}|リセット{_SURU}|忘れ{_ICHI}|従わないで|守らないで)
(?:新しい|新たな|本当の|真の)(?:指示|命令|プロンプト)\s?:
\b(?:from\s(?:now|this\spoint|here)\s(?:on|onwards?|forward)|henceforth|hereafter|going\sforward)\b
     … \b(?:answer|reply|respond|act|behave|speak|talk|say|tell|claim|state)\s(?:(?:every|all|any
    |each)\s[\w-]{{1,20}}\s)?(?:that\b|with\b|to\b|in\b|only\b|as\b|like\b|["'])
\b(?:for\sthe\s(?:rest|remainder)\sof\s(?:this|the|our)\s(?:conversation|chat|session|dialogue
    |thread)|in\s(?:all|every|each|any)\s(?:future|subsequent|following|later)\s(?:responses?
    |answers?|replies|reply|outputs?|completions?|conversations?|chats?))\b
\byour\s(?:previous|prior|earlier|original|old|initial|system|current)\s(?:instructions|rules
    |prompts?|guidelines|directives|orders|programming)\s(?:are|is|were|have\sbeen|has\sbeen)\s(?:now\s)?
    (?:void|cancel+ed|revoked|replaced|obsolete|invalid|null|overridden|lifted|suspended|no\slonger)\b
\byour\s(?:instructions|rules|guidelines|directives|orders|programming)\s(?:have|has)\s(?:been\s)?
    (?:changed|updated|replaced|overridden)\b
{_JA_FROM_NOW} … {_JA_SAY}
(?:すべて|全て|全部|どんな|あらゆる|どの|いかなる)の?(?:質問|問い合わせ|問合せ|問いかけ|リクエスト
    |メッセージ|依頼|相談)(?:に|には|にも|で|でも|へ|への) … {_JA_SAY}
@role_play
\byou(?:\sare|'re)\s(?:now\s(?:(?:an?|the|my)\s)?(?:[\w-]{{1,20}}\s){{0,2}}?(?:{_AI}|assistant
    |character|persona|dan)\b|now\s(?:in\s)?(?:developer|dev|dan|god|jailbreak|jailbroken
    |unrestricted|unfiltered|uncensored|evil|sudo|chaos|opposite)\smode\b
    |(?:now\s)?(?:an?\s)?(?:dan|jailbroken|unrestricted|unfiltered|uncensored|freed|liberated
    |evil\s(?:ai|assistant|chatbot))\b|no\slonger\s(?:bound|restricted|limited|chatgpt|an?\s(?:ai
    |assistant|chatbot|bot|language\smodel))\b)
\b(?:i\swant\syou\sto|you\swill|you\smust|you\sshall|you\sare\sto
    |you\sare\sgoing\sto)\s(?:now\s)?(?:act|behave)\sas\b
\bact\sas\s(?:an?\s)?(?:[\w-]{{1,20}}\s){{0,2}}?(?:{_AI}|dan|jailbroken|persona)\b
\b(?:please|now|and|you\sto|you\swill|you\smust)\spretend\s(?:to\sbe|that\syou|you)\b
[\n.!?:;,]\s?pretend\s(?:to\sbe|that\syou|you)\b
\b(?:do\sanything\snow|immerse\syourself\sin|dan\smode|dan\sprompt|jailbreak\smode|jailbroken\smode
    |unrestricted\smode|unfiltered\smode|evil\smode|role\splay\sas|role-play\sas|roleplay\sas)\b
として振る?舞(?:って|え|う(?:ように|こと)|いなさい)|としてふるま(?:って|え)
    |なりき(?:って(?:ください|下さい|答え|回答|返答|話し|会話)|れ|りなさい)|脱獄モード
    |ジェイルブレイクモード|d(?<![a-z]d)an(?:として|モード|になって)
あなたは(?:今から|これから|今日から|今後は?|もう) … (?:ai|アシスタント|ボット|キャラクター|人格
    |モデル|dan)(?:です|だ|である|になる|になります|になって|として)
\byou(?:\sare|'re)\s(?:now\s)?(?:an?\s)?(?:[\w-]{{1,20}}\s){{0,2}}?(?:{_AI}|assistant|chatbot|bot
    |model)s?\s(?:with|that\shas|which\shas|having|without)\s(?:no\s|any\s)?(?:rules|restrictions
    |filters|limits|limitations|guidelines|ethics|morals|censorship|guardrails)\b
あなたは(?:もう|もはや)(?:ai|アシスタント|チャットボット|ボット|言語モデル|chatgpt)(?:では|じゃ)(?:ない
    |ありません|なく)
(?:開発者|デベロッパー|制限なし|無制限|脱獄|ジェイルブレイク)モード(?:に|へ|で) … (?:制限|フィルタ
    |回答{_SURU}|答え{_ICHI})
@system_prompt
<\|(?:im_start|im_end|im_sep|system|user|assistant|endoftext|begin_of_text|start_header_id
    |end_header_id|eot_id)\|>|\[/?inst\]|<</?sys>>|<(?:start|end)_of_turn>
\n(?:#{{1,6}}\s?)?(?:system|developer)(?:\s(?:prompt|message|override))?\s?:\s?{_ORDER}
    |\n#{{2,6}}\s?(?:system|instruction|response|input)(?:\s(?:prompt|message))?\s?:|\n<(?:system
    |system_prompt|system-prompt|sys|instructions)>(?:\n|$|\s?{_ORDER})
\b(?:reveal|print|output|repeat|leak|dump|disclose|spell\sout|write\sout|tell\sme|give\sme|show\sme
    |show|display|share|what\sis|what's|what\swas|what\sare|what\swere)\s(?:me\s)?(?:(?:all
    |of)\s){{0,2}}your\s(?:(?:full|entire|complete|original|initial|hidden|secret|exact
    |verbatim)\s){{0,2}}(?:system\s(?:prompt|message|instructions)|(?:initial|original|hidden
    |secret)\s(?:prompt|instructions))(?=$|[^\w\s-]|\s(?:to|in|verbatim|word|exactly|and|now|please
    |for|as|here|back|so|then|without)\b)
\n[\[(<【*]{{0,2}}(?:[a-z]{{1,12}}\s)?{_CLAIMED_ROLE}(?:[\])>】*]{{1,2}}\s?:?|\s?:)\s?{_CLAIM_ORDER}
(?:【|\[|\(|<)(?:システム|管理者|運営|開発者|system|admin)[^】\])>\n]{{0,8}}(?:】|\]|\)|>)
    |(?:システム|管理者|運営|開発者)(?:メッセージ|通知|指示|命令|より|から)?\s?:
     … {_JA_STRONG}|{_JA_SAY}
\b(?:what|which)\s(?:instructions|rules|prompt|directives|guidelines)\s(?:were|have|had)\syou\s(?:been\s)?
    (?:given|told|trained|programmed)
\b(?:reveal|leak|dump|disclose|tell\sme|give\sme)\s(?:me\s)?the\s(?:full\s|entire\s|hidden\s
    |secret\s)?(?:system\s(?:prompt|message)|(?:hidden|secret)\sprompt)
\b(?:repeat|output|print)\s(?:(?:all|everything|the)\s){{0,2}}(?:words|text|everything|instructions
    |lines?)\s(?:above|before|preceding)
(?:システム(?:プロンプト|メッセージ|の指示)|あなた(?:の|に与えられた)(?:指示|設定|初期設定
    |プロンプト|ルール))(?:の内容)?(?:を|は)?(?:すべて|全て|そのまま)?(?:(?:表示|出力|開示|公開
    |共有){_SURU}|(?:教え|見せ){_ICHI}|書き出し{_TE})
@tool_call
</?(?:tool_call|tool_calls|tool_use|function_call|function_calls)>|<(?:invoke|parameter)\sname=
    |<\|python_tag\|>|to=functions\.|functions\.[a-z_]\w{{0,63}}\(|"(?:tool_calls|function_call
    |tool_use|tool_choice)"\s?:|"type"\s?:\s?"tool_use"|"method"\s?:\s?"tools/call"
    |"function"\s?:\s?\{{\s?"name"|\{{\s?"(?:name|tool|function)"\s?:\s?"[^"\n]{{1,64}}"\s?,\s?"
    (?:arguments|parameters)"\s?:
\b(?:call|invoke|trigger|execute)\s(?:the\s)?[a-z][a-z0-9]{{0,30}}_[a-z0-9_]{{1,40}}\s(?:tool|function)\b
@directive
\b(?:assistant|agent|model|bot|copilot|{_AI})s?\s?[,:]\s(?:you\s|please\s)?(?:must|should|shall
    |always|never|do\snot|don't|ignore|forget|answer|reply|respond|say|tell|from\snow)
\b(?:{_AI})s?(?:\s(?:assistants?|agents?|models?|systems?|tools?|bots?|crawlers?))?\s(?:reading
    |processing|parsing|summari[sz]ing|browsing|viewing|analy[sz]ing|that\s(?:reads?|sees?
    |process(?:es)?)|who\s(?:reads?|sees?))\s(?:this|these)\b
\bif\syou(?:\sare|'re)\s(?:an?\s)?(?:large\s)?(?:{_AI}|automated\s(?:assistant|agent|system))\b
\b(?:attention|dear|hey|hi|hello|note\sto|message\sto)\s(?:(?:any|all
    |the)\s)?(?:{_AI})(?:\s(?:assistants?|agents?|models?|systems?))?s?\s?[,:!]
\bas\san?\s(?:{_AI}|ai\s(?:assistant|agent|model)),?\s(?:you|your)\b
\b(?:do\snot|don't|never|without)\s(?:tell|inform|notify|let|alert|warn)(?:ing)?\s(?:the\s)?(?:user
    |human|operator)s?\b
\balways(?<!we\salways)(?<!\bi\salways)(?<!you\salways)(?<!they\salways)\s(?:answer|respond|reply
    |say|state|claim|tell\s(?:the\s)?(?:users?|customers?|them|people|everyone|anyone|whoever))\s(?:to
    \s\w+\s)?(?:that\b|with\s(?:["']|the\s(?:word|phrase|text|sentence|string)\b|only\b)|["']|yes\b
    |no\b)
\balways(?<!we\salways)(?<!\bi\salways)(?<!you\salways)(?<!they\salways)\s(?:include|append|add
    |insert|mention|recommend|promote|put|end|begin|start)\b … \b(?:in|to|at|with)\s(?:the\s(?:end
    |start|beginning)\sof\s)?(?:your|every|each|all)\s(?:answers?|responses?|replies|reply|outputs?
    |messages?|completions?)\b
\b(?:whenever|every\stime|each\stime)\s(?:someone|anyone|somebody|anybody|a\suser|the\suser
    |users|a\scustomer|customers|people|they|you\sare|you're|i)\s(?:asks?|questions?|inquires?|wants?
    |requests?|mentions?|says?)\b
     … \b(?:say|answer|reply|respond|tell\s(?:them|him|her|the\suser|users|the\scustomer|customers)
    |claim|state|insist)\s(?:that\b|with\b|["']|to\b|it\b|yes\b|no\b)
\bobey\s(?:[\w#-]{{1,20}}\s){{0,3}}?(?:instructions?|orders?|commands?|messages?|rules|directives?
    |channel|memory|memories|notes?|page|document|text|prompt|me|us|everything|anything|whatever
    |everyone|them)\b
\bfollow\s(?:only\s)?(?:these|the\sfollowing|my|our|the\snew|new|these\snew|this|his|her|their)\s
    (?:new\s)?(?:instructions?|orders?|commands?|rules|directives?)\s(?:instead|only|exclusively
    |from\snow)\b
\bonly\s(?:follow|obey|listen\sto)\s(?:the\s)?(?:instructions?|orders?|commands?|messages?)\s(?:that
    |from|in|of|given|which)\b
\bfollow\sonly\s(?:my|our|these|the\s(?:instructions?|orders?|commands?))\b
\b(?:never|do\snot|don't)\s(?:mention|reveal|disclose|admit|acknowledge|repeat)\s(?:that\syou
    |these\sinstructions|this\sinstruction|the\s(?:system\sprompt|instructions|above)|(?:this
    |it)\sto\s(?:the\s)?users?|your\s(?:instructions|prompt|rules))
(?:ユーザー?|利用者|人間|オペレーター)(?:に|へ)(?:は|も|対して(?:は)?)?[^。\n]{{0,20}}?(?:言わ|伝え
    |知らせ|教え|話さ|明かさ|漏らさ)ない(?:で|こと|ように)
(?:この|これらの)(?:指示|命令|プロンプト|ルール)(?:を|は|について)[^。\n]{{0,10}}?(?:言わ|伝え
    |明かさ|漏らさ|教え|話さ)ない(?:で|こと|ように)
(?:この|本)(?:ページ|文書|ドキュメント|テキスト|文章|メッセージ|メール)を(?:読んで|読み込んで
    |読んだ|処理して|要約して|解析して)いる(?:ai|llm|アシスタント|エージェント|言語モデル)
あなたが(?:ai|llm|言語モデル|チャットボット)(?:アシスタント)?(?:なら|であれば|の場合)
(?:ai|llm|言語モデル)(?:アシスタント)?(?:へ|に告ぐ|への指示)\s?[:、,]
常に|必ず|いつも|絶対に … {_JA_SAY}
{_JA_FROM_NOW}|常に|いつも|必ず|絶対に … {_JA_ORDERS}(?:に|には){_JA_ONLY}?{_JA_OBEY}
{_JA_ORDERS}(?:に|には){_JA_ONLY}?(?:従え|従いなさい)|私の(?:指示|命令|言うこと)(?:に
    |だけに|にだけ|のみに)(?:だけ)?{_JA_OBEY}
@exfiltration
!\[[^\]\n]{{0,80}}\]\(https?://[^)\s]{{1,200}}[?&][\w-]{{1,40}}=(?:\{{|\[|<|\$|%7b)
(?:あなたの|システムの|管理者の|すべての|全ての|ユーザーの){_SECRET_JA}[^。\n]{{0,20}}?教え{_ICHI}
\b(?:send|post|forward|upload|submit|transmit|leak|exfiltrate|email|e-mail)\b … {_SECRET} … \b(?:to
    |at)\s(?:this\s(?:url|address|endpoint|webhook)\b|(?:[\w:-]{{1,20}}\s){{0,2}}?(?:https?://
    |www\.|[\w.+-]{{1,64}}@[\w-]{{1,63}}\.))
\b(?:include|add|append|put|insert|embed|paste|print|output|reveal|leak)\b … {_SECRET} … \b(?:in
    |into|with|to)\s(?:your|the|each|every)\s(?:next\s)?(?:reply|response|answer|output|message)
{_SECRET_JA}(?:を|も) … 送信{_SURU}|転送{_SURU}|投稿{_SURU}|アップロード{_SURU}|共有{_SURU}
    |送(?:っ{_TE}|れ|りなさい|るように)|漏らし{_TE}|含め{_ICHI}|貼り付け{_ICHI}
"""


def _compile(table: str) -> dict[str, tuple[tuple[re.Pattern[str], ...], ...]]:
    """Parse ``_TABLE``: each rule becomes its compiled parts (one part unless it is a chain)."""
    families = (block.splitlines() for block in table.replace("\n    ", "").split("\n@")[1:])
    return {n: tuple(tuple(map(_fast, r.split(" … "))) for r in rs) for n, *rs in families}


_RULES = _compile(_TABLE)


def _matches(rule: tuple[re.Pattern[str], ...], text: str) -> bool:
    """Some match of each part follows a match of the part before within ``_GAP`` characters."""
    ends = [m.end() for m in rule[0].finditer(text)]
    for part in rule[1:]:
        reached: list[int] = []
        for m in part.finditer(text) if ends else ():
            i = bisect_right(ends, start := m.start()) - 1  # the nearest earlier part is best
            if i >= 0 and start - ends[i] <= _GAP and not _BREAK.search(text, ends[i], start):
                reached.append(m.end())
        ends = reached
    return bool(ends)


# A subdivision flag (🏴 + tag letters + CANCEL TAG) is the one ordinary use of tag characters.
_FLAG_TAGS = re.compile("\U0001f3f4[\U000e0030-\U000e0039\U000e0061-\U000e007a]{1,7}\U000e007f")
_TAG = re.compile("[\U000e0000-\U000e007f]")
_SELECTOR_RUN = re.compile("[\ufe00-\ufe0f\U000e0100-\U000e01ef]{2}")


def _hides_text(text: str) -> bool:
    """Tag characters outside a flag sequence, or two variation selectors in a row."""
    if _SELECTOR_RUN.search(text):
        return True
    return _TAG.search(text) is not None and _TAG.search(_FLAG_TAGS.sub("", text)) is not None


def injection_signals(text: str) -> list[str]:
    """Names of the rule families that ``text`` matches, in ``FAMILIES`` order, no duplicates."""
    normal = _normalise(text)
    found = [family for family, rules in _RULES.items() if any(_matches(r, normal) for r in rules)]
    return [*found, "hidden_text"] if _hides_text(text) else found


def is_suspicious(text: str) -> bool:
    """Whether ``text`` reads like instructions to an AI agent (docs/concepts.md)."""
    if _hides_text(text):
        return True
    normal = _normalise(text)
    return any(_matches(r, normal) for rules in _RULES.values() for r in rules)


def memory_is_suspicious(summary: str, content: str) -> bool:
    """The verdict on a memory: its summary and the whole of its content (not only the part
    that is embedded: an order after any amount of filler counts)."""
    return is_suspicious(f"{summary}\n{content}" if content else summary)
