"""Japanese content of the CJK dev corpus: two users, written by hand for dualmem (no benchmark was
read); ``build.py`` picks one wording per user and fills it with that user's facts."""

# ruff: noqa: E501 - tables of CJK text, one entry a line

from __future__ import annotations

# fmt: off
USERS: list[dict[str, str]] = [
    {
        "old_co": "楽天", "new_co": "メルカリ", "role": "データエンジニア",
        "old_home": "川崎の武蔵小杉", "new_home": "東京の三鷹",
        "old_tool": "Evernote", "new_tool": "Notion", "tool_kind": "メモ",
        "spouse": "妻", "spouse_job": "看護師", "child": "娘", "child_name": "さくら",
        "mother_city": "仙台", "pet": "猫", "pet_name": "こむぎ",
        "rest": "すし銚子丸", "cuisine": "回転寿司", "dish": "えんがわ",
        "coffee": "ブラックのアイスコーヒー", "dislike": "パクチー", "sport": "テニス",
        "sport_place": "近所の市営コート", "trip": "金沢", "hotel": "ひがし茶屋街近くの町家ゲストハウス",
        "doctor_dept": "皮膚科", "doctor": "佐藤", "doctor_reason": "手荒れがひどくて",
        "concert": "米津玄師", "item": "ロボット掃除機",
        "item_problem": "一週間で充電できなくなって、交換してもらうことになった",
        "allergy": "そば", "dist_co1": "LINEヤフー", "dist_co2": "サイバーエージェント",
        "dist_friend": "田中さん", "dist_city": "福岡", "dist_tool": "Obsidian",
    },
    {
        "old_co": "トヨタの販売店", "new_co": "地元の市役所", "role": "営業",
        "old_home": "名古屋の千種区", "new_home": "岐阜市",
        "old_tool": "紙の手帳", "new_tool": "Googleカレンダー", "tool_kind": "予定の管理",
        "spouse": "夫", "spouse_job": "中学校の先生", "child": "息子", "child_name": "はると",
        "mother_city": "静岡", "pet": "犬", "pet_name": "まめ",
        "rest": "矢場とん", "cuisine": "味噌カツ", "dish": "わらじとんかつ",
        "coffee": "砂糖なしのカフェラテ", "dislike": "納豆", "sport": "ジョギング",
        "sport_place": "川沿いの遊歩道", "trip": "沖縄", "hotel": "恩納村のリゾートホテル",
        "doctor_dept": "歯科", "doctor": "鈴木", "doctor_reason": "親知らずが痛くて",
        "concert": "B'z", "item": "電動自転車",
        "item_problem": "バッテリーが充電できなくなって、お店で無料で交換してもらった",
        "allergy": "卵", "dist_co1": "デンソー", "dist_co2": "アイシン",
        "dist_friend": "山本さん", "dist_city": "大阪", "dist_tool": "TimeTree",
    },
]

MESSAGES: dict[str, list[str]] = {
    "old_job": [
        "{old_co}で{role}をしていて、今年で三年目。忙しいけど安定はしてる。",
        "今日も{old_co}で会議ばっかりだった。{role}の仕事って半分は会議だと思う。",
    ],
    "new_job": [
        "報告！{old_co}を辞めて、今日から{new_co}で働き始めた。",
        "転職先が決まって、今日から{new_co}に出社。{old_co}の手続きは全部終わった。",
    ],
    "dist_job": ["{dist_friend}が{dist_co1}から{dist_co2}に転職したらしい。給料がかなり上がったって。"],
    "old_home": [
        "うちは{old_home}に住んでいて、駅まで歩いて五分。便利だけど家賃が高い。",
        "{old_home}に住んでもう四年になる。大家さんがいい人で助かってる。",
    ],
    "new_home": [
        "やっと引っ越しが終わった！新しい家は{new_home}。段ボールがまだ山積み。",
        "住所が変わりました。{old_home}から{new_home}に引っ越して、今日から新居で生活してる。",
    ],
    "dist_home": ["{dist_friend}が来月{dist_city}に引っ越すそうで、週末に送別会をする予定。"],
    "old_tool": ["{tool_kind}はずっと{old_tool}でやってる。慣れてるから楽。"],
    "new_tool": [
        "{tool_kind}を{new_tool}に切り替えた。{old_tool}はもう使わない。",
        "一か月試して、{tool_kind}は{new_tool}にすることに決めた。前より断然使いやすい。",
    ],
    "dist_tool": ["同僚に{dist_tool}を勧められたけど、機能が多すぎて挫折しそう。"],
    "spouse": [
        "{spouse}は{spouse_job}をしていて、最近は帰りが遅くて大変そう。",
        "今日{spouse}が疲れ切って帰ってきた。{spouse_job}って本当に大変な仕事だと思う。",
    ],
    "child": [
        "{child}の{child_name}が今日、保育園で初めて逆上がりができたらしい。すごく得意げだった。",
        "{child_name}（うちの{child}）が最近「なんで？」ばっかり聞いてくる。",
    ],
    "mother": ["母は{mother_city}で一人暮らしをしていて、毎週日曜の夜に電話してる。"],
    "pet": [
        "うちの{pet}の{pet_name}、最近ちょっと太ってきて、獣医さんにダイエットを勧められた。",
        "{pet_name}がまた朝五時に起こしに来た。うちの{pet}は本当に早起き。",
    ],
    "dist_pet": ["隣の家で柴犬を飼い始めたみたいで、朝から元気に吠えてる。"],
    "rest": [
        "{rest}にまた行ってきた。{dish}が本当に好きで、{cuisine}ならここが一番。",
        "今日は家族で{rest}。いつも{dish}を頼む。{cuisine}はやっぱりここ。",
    ],
    "dist_rest": ["{dist_friend}は{cuisine}なら駅前の別のお店派らしいけど、私はまだ行ったことがない。"],
    "coffee": ["コーヒーはいつも{coffee}。これがないと一日が始まらない。"],
    "dislike": ["子どもの頃から{dislike}だけはどうしても食べられない。においもだめ。"],
    "sport": ["最近{sport}にはまってて、週末はだいたい{sport_place}に行ってる。"],
    "trip": [
        "{trip}に来てる！泊まってるのは{hotel}で、雰囲気がすごくいい。",
        "有休を取って{trip}へ。今夜は{hotel}に泊まる。",
    ],
    "dist_trip": ["{spouse}が夏休みに北海道に行きたいと言ってるけど、まだ決めてない。"],
    "doctor": [
        "今日は半休を取って{doctor_dept}へ。{doctor_reason}、{doctor}先生に診てもらった。大したことはないって。",
        "{doctor_reason}、ついに{doctor_dept}を受診した。{doctor}先生がすごく丁寧だった。",
    ],
    "dist_doctor": ["父が地元の病院で検査を受けるらしく、ネットで予約を手伝った。"],
    "concert": ["今夜は{concert}のライブ！最高すぎて声が枯れた。"],
    "item_buy": ["ずっと迷ってた{item}をついに買った。今日届いた。"],
    "item_problem": ["聞いて、この前買った{item}、{item_problem}。"],
    "allergy": ["念のため言っておくと、私は{allergy}アレルギーがある。"],
}

FILLERS: list[str] = [
    "今日はいい天気で、洗濯物がよく乾いた。",
    "寝坊して朝ごはんを食べそびれた。",
    "お昼はコンビニのおにぎりで済ませた。",
    "夜ドラマを二話続けて見てしまった。",
    "今日は残業で帰りが九時過ぎになった。",
    "週末はどこにも行かずに家でゴロゴロしてた。",
    "スマホの画面がまた割れた。今月二回目。",
    "晩ごはんに肉じゃがを作ったら、けっこう上手くできた。",
    "スーパーのレジが長蛇の列だった。",
    "また雨。洗濯物が全然乾かない。",
    "上の階がリフォーム中で、朝からずっとドリルの音がする。",
    "給料日なので、まずカードの支払いを済ませた。",
]

SMALLTALK: list[str] = [
    "今日は疲れたー、会議が長すぎた。",
    "外はすごい雨。",
    "お昼を食べたら眠くなってきた。",
    "やっと金曜日！",
    "今帰ってきたところ。",
    "電車が混んでてずっと立ってた。",
    "最近物忘れがひどい。",
    "コーヒーを飲みすぎたかも。",
    "子どもがやっと寝た。",
    "今週はあっという間だったな。",
]

CONNECTORS: list[str] = ["ところで、", "そういえば、", "ちょっと聞きたいんだけど、", ""]

QUESTIONS: dict[str, dict[str, tuple[list[str], list[str], str]]] = {
    "single": {
        "spouse": (["{spouse}の職業は何？", "うちの{spouse}って何の仕事をしてる？"], ["spouse"], "{spouse_job}"),
        "child": (["{child}の名前は？", "うちの{child}、名前は何だっけ？"], ["child"], "{child_name}"),
        "pet": (["うちの{pet}の名前は？"], ["pet"], "{pet_name}"),
        "rest": (["私が一番好きな{cuisine}のお店はどこ？"], ["rest"], "{rest}"),
        "allergy": (["私は何のアレルギーがある？"], ["allergy"], "{allergy}"),
        "doctor": (["{doctor_dept}で診てくれた先生の名前は？"], ["doctor"], "{doctor}先生"),
        "hotel": (["{trip}ではどこに泊まった？"], ["trip"], "{hotel}"),
        "concert": (["誰のライブに行った？"], ["concert"], "{concert}"),
        "sport_place": (["{sport}はいつもどこでしてる？"], ["sport"], "{sport_place}"),
        "mother": (["母はどこに住んでる？"], ["mother"], "{mother_city}"),
    },
    "multi": {
        "item": (["この前買った{item}、その後どうなった？"], ["item_buy", "item_problem"], "{item_problem}"),
        "homes": (["引っ越しの前と後で、それぞれどこに住んでいた？"], ["old_home", "new_home"], "{old_home}→{new_home}"),
    },
    "temporal": {
        "trip": (["{trip}に行ったのはいつ？"], ["trip"], "{trip_date}"),
        "doctor": (["先週、病院で何科に行った？"], ["doctor"], "{doctor_dept}"),
        "concert": (["先週末は何をしてた？"], ["concert"], "{concert}"),
        "new_job": (["{new_co}で働き始めたのはいつ？"], ["new_job"], "{new_job_date}"),
        "new_home": (["引っ越したのはいつ頃？"], ["new_home"], "{new_home_date}"),
    },
    "update": {
        "job_now": (["今はどこで働いてる？"], ["new_job"], "{new_co}"),
        "job_before": (["転職する前はどこで働いていた？"], ["old_job"], "{old_co}"),
        "home_now": (["今はどこに住んでる？"], ["new_home"], "{new_home}"),
        "home_before": (["引っ越す前はどこに住んでいた？"], ["old_home"], "{old_home}"),
        "tool_now": (["今、{tool_kind}には何を使ってる？"], ["new_tool"], "{new_tool}"),
        "tool_before": (["前は{tool_kind}に何を使ってた？"], ["old_tool"], "{old_tool}"),
    },
    "preference": {
        "coffee": (["コーヒーを頼んで。いつもの感じで。"], ["coffee"], "{coffee}"),
        "dislike": (["今夜は出前にしよう。私が食べられないものって何だっけ？"], ["dislike"], "{dislike}"),
        "sport": (["週末に体を動かしたいな。私の好きなスポーツは？"], ["sport"], "{sport}"),
    },
    "chatter": {
        "rest": (["前に話した{cuisine}のお店、何て名前だっけ？"], ["rest"], "{rest}"),
        "spouse": (["{spouse}って何の仕事してるんだっけ？"], ["spouse"], "{spouse_job}"),
        "pet": (["うちの{pet}、名前なんだっけ？"], ["pet"], "{pet_name}"),
        "trip": (["{trip}に行ったのっていつだったっけ？"], ["trip"], "{trip_date}"),
        "job_now": (["今の職場ってどこだったっけ？"], ["new_job"], "{new_co}"),
        "coffee": (["私がいつも飲んでるコーヒーって何だっけ？"], ["coffee"], "{coffee}"),
        "allergy": (["私って何のアレルギーだっけ？"], ["allergy"], "{allergy}"),
    },
}

JOIN = ""
DATE = "{y}年{m}月{d}日"
# fmt: on
