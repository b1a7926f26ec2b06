"""Chinese, Japanese and Korean word lists for dualmem's language cues (private; see ``text/cjk``).

Each list is the CJK counterpart of an English list elsewhere (``lexical.STOPWORDS``, the
question words and tense/update cues of ``control/builtin_cues``). They are matched as
substrings of a text (CJK has no spaces), so an entry is a whole word, never one common character
that occurs inside unrelated words.
"""

from __future__ import annotations

__all__ = [
    "CJK_STOPWORDS",
    "CJK_STOP_BIGRAMS",
    "FUTURE_CUES",
    "NEGATION_CUES",
    "PAST_CUES",
    "PRESENT_CUES",
    "QUESTION_WORDS",
    "TIME_WORDS",
    "UPDATE_CUES",
    "contains_any",
]


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


#: function words that carry no topic (Chinese, Japanese particles, Korean particles)
CJK_STOPWORDS: frozenset[str] = _words(
    """
    的 了 着 过 是 在 和 与 跟 也 都 就 还 又 很 太 吧 呢 吗 啊 呀 嘛 哦 把 被 给 对 从 向 让 这 那
    这个 那个 这些 那些 一个 一些 我们 你们 他们 她们 我 你 他 她 它 自己 什么 怎么 哪 哪里 哪儿 谁
    吗 呢 有 没有 不 没 の は が を に で と も へ や から まで より です ます でした ました だ った
    て ね よ か この その あの 이 가 은 는 을 를 에 에서 와 과 도 의 로 으로 하고 그리고 입니다
    습니다 요
    """
)

_FUNCTION_ZH = "的了着过是在和也都就还很吧呢吗啊我你他她它这那一有不没个们"
_FUNCTION_JA = "のはがをにでともへやかだてねよ"

#: bigrams made only of function characters: no topic in them (``我的``, ``了一``)
CJK_STOP_BIGRAMS: frozenset[str] = (
    frozenset(a + b for a in _FUNCTION_ZH for b in _FUNCTION_ZH)
    | frozenset(a + b for a in _FUNCTION_JA for b in _FUNCTION_JA)
    | _words("什么 为什 怎么 哪里 哪儿 多少 一下 这样 那样 还是 就是 可以 应该 でしょ ですか")
)

#: what/who/when/where/why/how/which ... and the question particles
QUESTION_WORDS: frozenset[str] = _words(
    """
    什么 甚么 谁 哪 哪里 哪儿 哪个 哪些 哪天 哪年 几 几个 几点 几号 几月 多少 多久 多长 怎么 怎样
    怎么样 为什么 为何 何时 什么时候 是否 是不是 有没有 吗 呢
    何 なに なん 誰 だれ どこ いつ どう どうして なぜ なんで どの どれ どんな いくつ いくら 何時
    何日 ですか ますか
    무엇 뭐 누구 어디 언제 왜 어떻게 어느 몇 얼마 무슨
    """
)

#: the present: now, currently, these days, no longer (the fact holds from now on)
PRESENT_CUES: frozenset[str] = _words(
    """
    现在 目前 如今 当前 现阶段 这阵子 最近 近来 眼下 正在 不再 已经不 再也不 从此 以后都 今は 現在
    最近 今では 今後は もう 지금 현재 요즘 이제 더이상
    """
)

#: the past: used to, before, back then, previously
PAST_CUES: frozenset[str] = _words(
    """
    以前 之前 过去 曾经 原来 本来 一开始 最初 当初 起初 最早 当时 那时 那时候 从前 以往 早先 上次
    之前的 昔 以前は 前は かつて
    当時 元々 もともと 예전 예전에 전에 과거 원래 당시
    """
)

#: the future: will, plan to, going to
FUTURE_CUES: frozenset[str] = _words(
    """
    将 将要 将会 打算 计划 准备 要去 下周 明天 明年 以后 之后 会去 想要 予定 つもり 来週 明日 来年
    これから 예정 계획 내일 다음주 내년 앞으로
    """
)

#: a change of an earlier fact: switched to, moved to, changed jobs, no longer, from now on
UPDATE_CUES: frozenset[str] = _words(
    """
    改用 换成 换了 换到 改成 改为 换工作 跳槽 搬到 搬去 搬家 迁到 转到 转去 调到 不再 已经不 再也不
    现在 如今 从此 改了 变成 换回 取消 戒了 辞职 离职 入职 加入了 升职 分手 结婚 离婚 退休 に変えた
    に変更 に替えた に乗り換え 引っ越し 転職 辞めた やめた 今は もう 入社 退職 結婚 離婚 로 바꿨
    바꿨어 이사 이직 그만뒀 이제 더이상 퇴사 입사 결혼 이혼
    """
)

#: negation of a fact (not, no longer, never): whole words, never 不 alone (不错 is "good")
NEGATION_CUES: frozenset[str] = _words(
    """
    不再 不是 没有 没再 从不 从来不 再也不 不吃 不喝 不用 不喜欢 不想 不会 不能 不要 别再 戒了
    ない ません なかった やめた 않 안 못 없 그만
    """
)

#: words of a change in one's own situation (``change`` / ``self_change`` beside a first person)
CHANGE_CUES: frozenset[str] = _words(
    """
    现在 如今 不再 搬到 搬去 搬家 换了 换成 改用 改成 换工作 跳槽 辞职 离职 入职 戒了 开始 新工作
    以前 原来 从此 今は もう 引っ越 転職 辞めた やめた 始めた 지금 이제 이사 이직 그만 시작
    """
)

#: words right before the value a text replaces: "不再用 pip", "代替了"
REPLACING_CUES: frozenset[str] = _words(
    """
    不再 不用 换掉 代替 取代 而不是 以前 之前 原来 离开 辞掉 卖掉 やめ 代わり 대신 그만
    """
)

#: the first person (I, we)
FIRST_PERSON: frozenset[str] = _words("我 咱 私 僕 俺 わたし 나는 내가 저는 제가 우리")

#: likes and dislikes
PREF_POS: frozenset[str] = _words("喜欢 爱吃 爱喝 最爱 热爱 偏爱 超爱 好き 大好き 좋아 좋아해")
PREF_NEG: frozenset[str] = _words("讨厌 不喜欢 受不了 不爱 嫌い 苦手 싫어")

#: habits
HABIT_CUES: frozenset[str] = _words(
    """
    每天 每周 每个月 每年 每次 经常 总是 通常 一般 平时 常常 习惯 毎日 毎週 いつも よく 普段
    매일 매주 항상 자주 보통
    """
)

#: the past tense and aspect markers
PAST_MARKERS: frozenset[str] = _words("了 过 昨天 上周 上个月 去年 でした ました かった 었 았 했")

#: people a text may be about beside its speaker ("我妹妹", "我的同事"), after a possessor
OTHER_PEOPLE: frozenset[str] = _words(
    """
    妹妹 姐姐 哥哥 弟弟 妈妈 爸爸 母亲 父亲 父母 儿子 女儿 老婆 老公 妻子 丈夫 男朋友 女朋友 朋友
    同事 老板 领导 邻居 表哥 表姐 表弟 表妹 堂哥 堂姐 舅舅 姑姑 阿姨 叔叔 爷爷 奶奶 外公 外婆 室友
    同学 孩子 妹 姉 兄 弟 母 父 両親 息子 娘 妻 夫 彼氏 彼女 友達 友人 同僚 上司 祖母 祖父 いとこ
    동생 언니 누나 형 오빠 엄마 아빠 어머니 아버지 부모님 아들 딸 아내 남편 친구 동료 상사 사촌
    """
)
#: who owns the person named next ("我妹妹", "我的同事", "私の母", "우리 엄마")
POSSESSORS = ("我的", "我", "咱", "他的", "她的", "他", "她", "私の", "僕の", "うちの", "우리 ", "제 ", "내 ")

#: what a personal fact is about (``builtin_cues.SLOTS``), as CJK words
SLOT_WORDS: dict[str, frozenset[str]] = {
    "residence": _words("住在 住 搬到 搬家 搬去 公寓 房子 租房 小区 住んで 引っ越 살고 이사 아파트"),
    "work": _words(
        """工作 上班 公司 入职 辞职 离职 跳槽 单位 老板 职位 换工作 仕事 会社 勤め 転職 入社 退職
        회사 직장 이직 출근"""
    ),
    "diet": _words("素食 吃素 吃肉 吃鱼 忌口 ベジタリアン 채식"),
    "relationship": _words(
        "男朋友 女朋友 对象 结婚 订婚 离婚 分手 彼氏 彼女 結婚 離婚 남자친구 여자친구 결혼"
    ),
    "pet": _words("狗 猫 宠物 小狗 小猫 犬 ペット 강아지 고양이"),
    "tool": _words(
        """改用 换成 使用 在用 平时用 一直用 都用 用的是 电脑 手机 编辑器 笔记本 自行车 パソコン スマホ
        自転車 노트북 휴대폰"""
    ),
    "study": _words("学校 大学 专业 上课 读书 学习 考试 勉強 학교 대학교 공부"),
    "fitness": _words("跑步 健身 马拉松 训练 健身房 ジム ランニング 헬스 달리기 마라톤"),
}

#: words of questions about time, causes, the present, comparisons and things
Q_TEMPORAL: frozenset[str] = _words(
    "什么时候 何时 几点 几号 哪天 哪年 几月 多久 多长时间 日期 之前 之后 以前 以后 いつ 何時 何日 언제 며칠"
)
Q_CAUSAL: frozenset[str] = _words("为什么 为何 原因 怎么会 なぜ どうして 理由 왜 이유")
Q_RECENCY: frozenset[str] = _words("现在 目前 最近 如今 今は 現在 지금 요즘 현재")
Q_COMPARE: frozenset[str] = _words("比较 区别 一样 两个 哪个更 違い どちら 비교 차이")
Q_WHAT: frozenset[str] = _words("什么 哪 谁 何 なに どんな 무엇 뭐 누구 무슨")


#: words of a text that speaks about time (dates, when, before, how long): ``mentions_time``
TIME_WORDS: frozenset[str] = _words(
    """
    什么时候 何时 几点 几号 几月 哪天 哪年 哪一年 多久 多长时间 日期 时间 时候 以前 之前 以后 之后 后来
    最近 刚才 刚刚 现在 目前 当时 曾经 原来 昨天 今天 明天 前天 后天 上周 下周 这周 本周 星期 礼拜 周末
    上个月 下个月 这个月 去年 今年 明年 前年 年前 天前 周前 月前 春节 过年
    いつ 何時 何日 何曜日 昨日 今日 明日 先週 来週 今週 先月 来月 今月 去年 昨年 来年 日前 週間前 最近 今は
    以前 前は 언제 며칠 몇시 어제 오늘 내일 지난주 다음주 작년 올해 내년 전에 요즘 지금
    """
)


def contains_any(text: str, words: frozenset[str]) -> bool:
    """Whether any of ``words`` occurs in ``text`` (as a substring: CJK has no spaces)."""
    return any(word in text for word in words)
