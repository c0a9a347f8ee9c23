"""What a request asks for, read from its words: a change (and does the top tool only read?), or nothing said.

A caller whose role hides the tools that change things (approve, pay, delete, book) still sees their read-only
siblings, and those rank first for such a request: "approve my team's pending leave requests" finds the leave
balance, "订一张明天北京飞上海的机票" (book a flight) the flight search. The embeddings see the same topic and
the decision model saw the tool fit; what it did not see is that the request asks for an action the tool cannot
take. An agent that calls the reader reports a balance where the user asked for an approval.

Two small lexical tests, both explainable in the decision's reason:

* :func:`change_verb`: the request asks for a change. English: the request starts with a verb that changes
  state (after a polite or modal opening such as "please", "can you", "I need to", "go ahead and", and adverbs
  in -ly), so "where is my order" or "the train schedule" do not count, only "order a pizza", "schedule a
  call". Chinese: a two-character verb of change anywhere ("批准", "调高", "删除", "订一张"), since Chinese puts
  the verb after its object with 把.
* :func:`reads_only`: the tool only reads or computes: its name holds a read verb (get, list, search, view,
  extract, ...) and no verb of change, or, when its name has neither, its description starts with one ("Returns
  ...", "Shows ...", "查询 ..."). A tool flagged ``mutation: true`` (or an MCP tool with ``destructiveHint``)
  changes things; a tool whose name and first word say nothing (a plugin named after a brand) is not called a
  reader, so the feature stays 0 for it.

The decision's view (:mod:`toolrag.decision.view`) holds the conjunction as one feature (``change_reader`` in
:data:`toolrag.decision.view.FEATURES`), read by the shipped decision model like the others.

A third test, :func:`vague_word`, finds a placeholder for what a request leaves unsaid ("schedule something",
"处理一下这张发票"): whichever tool fits, such a call cannot be filled in. The view holds it as the feature
``vague``, which the shipped model reads.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from toolrag.catalog.profile import ToolProfile
from toolrag.text import CJK_RANGES

__all__ = ["ACTIONS", "CHANGE_VERBS", "READ_VERBS", "action_match", "change_verb", "reads_only", "request_action",
           "tool_action", "vague_word"]


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


#: English verbs (base form) that ask a system to change something: create, alter, remove, approve, send, buy.
#: Not "open" ("open notes.txt" reads it) nor "confirm" ("confirm whether the branch exists" checks).
CHANGE_VERBS: frozenset[str] = _words("""
    add allocate append apply approve archive assign authorize authorise ban block book buy cancel change charge
    clear close commit configure create deactivate decline delete deny deploy disable dismiss edit email
    enable enroll enrol file fire forward grant hire increase decrease insert install invite issue kill launch
    lock lower mark merge message modify move notify offboard onboard order pay place post promote publish
    purchase push raise reassign refund register reject release remove rename renew reopen replace reply request
    reschedule reserve reset restart restore revert revoke roll schedule sell send set settle share sign start
    stop submit subscribe suspend terminate text transfer trigger turn unblock uninstall unlock unsubscribe update
    upgrade upload void withdraw
""")
#: In a tool's name these are as often nouns ("get_issue", "list_messages", "read_file", "order_status"), so
#: they do not make it a tool of change there.
_NOUNS_IN_NAMES: frozenset[str] = _words("""
    block charge clear close email file fire issue lock mark message open order place post release request roll
    share text turn
""")
#: Verbs of a tool that only reads or computes (its name or the first word of its description).
READ_VERBS: frozenset[str] = _words("""
    analyse analyze browse calculate check classify compare compute count describe detect download estimate
    explain export extract fetch find forecast get identify inspect list locate lookup look monitor ocr parse
    predict preview query read recognise recognize retrieve return scan search show summarise summarize track
    validate verify view
""")
#: The same for Chinese descriptions (their first two characters).
_READ_ZH = ("查询", "查看", "获取", "检索", "搜索", "列出", "读取", "识别", "统计", "解读", "阅读", "核验", "返回",
            "显示")
#: Chinese verbs of change, matched anywhere in the request (two characters or more: a lone 发 or 订 is also part
#: of 发票 "invoice" and 订单 "order").
_CHANGE_ZH = (
    "删除", "删掉", "注销", "停用", "禁用", "冻结", "批准", "审批", "驳回", "撤销", "撤回", "创建", "新建", "建个",
    "建一个", "添加", "修改", "更改", "改成", "改为", "调整", "调高", "调低", "调到", "提到", "设置", "设为", "设成",
    "取消", "预订", "预定", "订一", "订个", "订张", "下单", "购买", "买一", "支付", "付款", "转账", "发送", "发给",
    "发个", "发一", "发条", "发封", "发布", "通知", "提交", "报销", "申请", "回退", "回滚", "部署", "重置", "开通",
    "授权", "收回", "登记", "预约", "涨工资", "加薪", "叫一辆", "邀请", "分配", "关掉", "关闭", "打开", "播放",
)
#: Around a Chinese verb (two characters before it, "|", two characters after): a question about how a thing is
#: done ("怎么设置的"), or the verb as a noun ("报销单" an expense form, "申请的" an application's) or as the
#: first half of one ("提交记录" commit history, "发布说明" release notes, "审批进度" approval progress: the request
#: is about the record of an action, not asking for it).
_ZH_NOT_ASKED = re.compile(r"(?:怎么|如何|怎样)\|?.?.?$|\|(?:[单的]|记录|说明|历史|日志|状态|列表|进度|流程|情况)")
#: Openings before an English request's verb: politeness, modals, "I want to", "go ahead and".
_OPENING = re.compile(
    r"^(?:(?:please|pls|kindly|just|now|then|ok(?:ay)?|hey|hi|so|and|also|quickly|"
    r"(?:can|could|would|will) (?:you|u|we|i)|i(?:'d| would) like (?:you )?to|i (?:want|need|have)(?: you)? to|"
    r"we (?:want|need|have) to|i'm trying to|help me(?: to)?|let's|let us|go ahead and|you should|"
    r"[a-z]+ly)[\s,!.:;]+)+")
_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")
#: A verb and its particle ("roll back", "sign off", "set up"), for the reason's words.
_PHRASE = re.compile(r"([a-z]+)(?:\s+(?:back|off|on|up|down|out|over)\b)?")
#: Verbs after a placeholder that make it the subject of a described problem ("something is wrong with my
#: laptop", "stuff keeps crashing"): the request then says what it is about.
_SUBJECT_VERBS = r"is|'s|was|went|seems|keeps|kept|happened|broke|feels|looks|goes|isn't|doesn't|won't"
#: Words that stand for what the request leaves unsaid: a placeholder object ("schedule something", "where's the
#: stuff we ordered", "the expense thing"; in lower case, so a title such as "Something Borrowed" is not one, and
#: not after recommend or suggest, where the user asks the tool to choose) or a verb that names no action
#: ("处理一下", "弄一下", "怎么办").
_VAGUE = re.compile(r"(?<!recommend )(?<!suggest )\b(?:something|stuff|whatever)\b(?!\s*(?:" + _SUBJECT_VERBS + r")\b)"
                    r"|\bthe [a-z]+ thing\b|处理一下|处理下|弄一下|弄下|搞一下|搞定|办一下|怎么办")
_NAME_SPLIT = re.compile(r"[^A-Za-z]+|(?<=[a-z])(?=[A-Z])")
_ZH = re.compile(f"[{CJK_RANGES}]")
#: Any of the Chinese verbs of change, longest first at one position ("建一个" before "建个").
_CHANGE_ZH_ANY = re.compile("|".join(re.escape(v) for v in sorted(_CHANGE_ZH, key=len, reverse=True)))


def change_verb(text: str) -> str | None:
    """The word of ``text`` that asks for a change (see the module docstring), or None.

    >>> change_verb("Please approve my team's pending leave requests")
    'approve'
    >>> change_verb("where is my order?") is None
    True
    >>> change_verb("把我们部门的预算调高 10 万")
    '调高'
    """
    if _ZH.search(text):
        for match in _CHANGE_ZH_ANY.finditer(text):
            if not _ZH_NOT_ASKED.search(text[max(match.start() - 2, 0):match.start()] + "|"
                                        + text[match.end():match.end() + 2]):
                return match.group(0)
    lowered = _OPENING.sub("", text.strip().lower())
    first = _PHRASE.match(lowered)
    if first is None or first.group(1) not in CHANGE_VERBS:
        return None
    return first.group(0)


def _name_words(name: str) -> list[str]:
    return [w.lower() for w in _NAME_SPLIT.split(name) if w]


def reads_only(tool: ToolProfile) -> bool:
    """Whether ``tool`` only reads or computes (see the module docstring); False when it says nothing."""
    if tool.mutation:
        return False
    words = _name_words(tool.id) + _name_words(tool.name)
    if any(w in CHANGE_VERBS and w not in _NOUNS_IN_NAMES for w in words):
        return False
    if any(w in READ_VERBS for w in words):
        return True
    description = (tool.description or "").strip()
    if description[:2] in _READ_ZH:
        return True
    first = _WORD.match(description.lower())
    if first is None:
        return False
    word = first.group(0)
    # "Returns", "Searches", "Classifies": the third person of a read verb
    stems = {word, word.removesuffix("s"), word.removesuffix("es"), word.removesuffix("ies") + "y"}
    return bool(stems & READ_VERBS)


def vague_word(text: str) -> str | None:
    """The word of ``text`` that stands for what it leaves unsaid (see :data:`_VAGUE`), or None.

    A request that names no object or no action leaves the choice between the best matches open: the decision's
    view (:mod:`toolrag.decision.view`) holds this as the feature ``vague``, which the shipped model reads.

    >>> vague_word("schedule something")
    'something'
    >>> vague_word("报销的事帮我弄一下")
    '弄一下'
    >>> vague_word("schedule a call with Tom at 3pm") is None
    True
    """
    match = _VAGUE.search(text[:1].lower() + text[1:])
    return match.group(0) if match else None



#: Kinds of action, each with its verbs (English base forms and Chinese). A request asks for one kind (its first
#: verb); a tool does one (the first verb of its id, its name or its description). A different kind is a strong
#: hint that a look-alike tool does not serve the request: "清理一下历史记录" (clear) and ``openWebHistory`` (read),
#: "log me out" and ``user_login``, "book a doctor" and ``cancelDoctorAppointment``.
ACTIONS: Mapping[str, frozenset[str]] = {kind: _words(verbs) for kind, verbs in (
    ("read", "get view show check query look see find search display list read browse fetch retrieve inquire "
             "lookup track monitor 查看 查询 看看 看一下 获取 查 搜索 查找 浏览 搜 检索 显示 列出 读取"),
    ("create", "add create new make register book reserve schedule submit apply insert enroll subscribe follow "
               "添加 创建 新建 预约 预订 预定 提交 申请 订阅 关注 登记 订"),
    ("update", "update modify change edit adjust amend rename move reschedule set configure 修改 更改 调整 编辑 "
               "更新 改成 改为 设置 设为"),
    ("delete", "delete remove cancel clear erase drop revoke withdraw unsubscribe unfollow unregister 删除 取消 "
               "清理 清除 撤销 撤回 移除 退订 取关 删掉"),
    ("send", "send share post forward reply publish email message text notify invite 发送 分享 发布 转发 回复 "
             "通知 邀请 发给"),
    ("pay", "pay buy purchase order transfer charge redeem 支付 购买 付款 转账 下单 买 赎回"),
    ("start", "start play open launch enable activate resume unlock install connect 开始 播放 打开 开启 启用 "
              "启动 解锁 安装 连接"),
    ("stop", "stop pause close end disable deactivate lock uninstall disconnect 停止 暂停 关闭 结束 停用 锁定 "
             "卸载 断开"),
    ("login", "login signin 登录 登入"),
    ("logout", "logout signout 退出登录 注销"),
    ("upload", "upload import 上传 导入"),
    ("download", "download export 下载 导出"),
    ("approve", "approve accept confirm 批准 同意 确认"),
    ("reject", "reject decline deny 拒绝 驳回"),
    ("compute", "calculate compute convert estimate translate predict analyze analyse summarize summarise "
                "计算 换算 转换 估算 翻译 预测 分析 总结"),
)}
_KIND_OF = {verb: kind for kind, verbs in ACTIONS.items() for verb in verbs}
_LOGIN = re.compile(r"\b(log|sign)\s*(?:(?:me|him|her|them|us|myself)\s+)?(in|on|out|off)\b", re.IGNORECASE)
_ZH_VERBS = re.compile("|".join(sorted((re.escape(v) for v in _KIND_OF if _ZH.search(v)), key=len, reverse=True)))


def _stem(word: str) -> str:
    """A verb's base form, roughly ("cancels", "cancelled", "cancelling" -> "cancel")."""
    for end in ("ing", "ed", "es", "s"):
        if word.endswith(end) and word[: -len(end)] in _KIND_OF:
            return word[: -len(end)]
    if word.endswith("led") and word[:-3] in _KIND_OF:
        return word[:-3]
    return word


def _kind(words: list[str]) -> str | None:
    """The action kind of the first word of ``words`` that names one."""
    return next((_KIND_OF[_stem(w)] for w in words if _stem(w) in _KIND_OF), None)


def _logins(text: str) -> str:
    return _LOGIN.sub(lambda m: m.group(1).lower() + ("in" if m.group(2).lower() in ("in", "on") else "out"), text)


#: Openings of a question: the request asks to be told something (read), whatever nouns follow ("what's Chen's
#: email address", "is there budget left").
_QUESTION = frozenset(_words("what whats what's where when who whom whose which why how is are was were do does did "
                             "can could will would any has have"))
#: A verb and its particle that name another action than the verb alone ("set up" creates, "look up" reads).
_PHRASES = {"set up": "create", "look up": "read", "sign up": "create", "turn on": "start", "turn off": "stop",
            "switch on": "start", "switch off": "stop", "put in": "create", "put into": "create", "get rid": "delete"}


def request_action(text: str) -> str | None:
    """The kind of action a request asks for: an English request's first word after a polite or modal opening
    when it is a verb of :data:`ACTIONS` (with its particle: "set up" creates) or opens a question (read); a
    Chinese request's first verb anywhere (Chinese puts the verb after its object with 把); else None. Only the
    first word counts in English: "what's Chen's email address" asks to read, whatever "email" says."""
    if _ZH.search(text):
        found = _ZH_VERBS.search(text)
        if found:
            return _KIND_OF[found.group(0)]
    words = _WORD.findall(_OPENING.sub("", _logins(text).strip().lower()))
    if not words:
        return None
    if words[0] in _QUESTION:
        return "read"
    pair = " ".join(words[:2])
    if pair in _PHRASES:
        return _PHRASES[pair]
    return _KIND_OF.get(_stem(words[0]))


def tool_action(tool: ToolProfile) -> str | None:
    """The kind of action a tool does: the first verb of its id's last part, its name, or its description."""
    last = re.split(r"[./:]", tool.id)[-1]
    for words in (_name_words(_logins(last)), _name_words(_logins(tool.name))):
        kind = _kind(words)
        if kind is not None:
            return kind
    description = (tool.description or "").strip()
    found = _ZH_VERBS.match(description)
    if found:
        return _KIND_OF[found.group(0)]
    return _kind(_WORD.findall(_logins(description).lower())[:2])


def action_match(text: str, tool: ToolProfile) -> int:
    """+1 when the request asks for the kind of action the tool does (:data:`ACTIONS`), -1 when it asks for
    another kind ("log me out" and ``user_login``, "取消预订" and a booking tool), 0 when either says none."""
    asked, does = request_action(text), tool_action(tool)
    if asked is None or does is None:
        return 0
    return 1 if asked == does else -1
