"""Korean content of the CJK dev corpus: two users, written by hand for dualmem (no benchmark was
read); ``build.py`` picks one wording per user and fills it with that user's facts. Wordings avoid
particles right after a filled-in word where its final consonant would change the particle."""

# ruff: noqa: E501 - tables of CJK text, one entry a line

from __future__ import annotations

# fmt: off
USERS: list[dict[str, str]] = [
    {
        "old_co": "삼성전자", "new_co": "네이버", "role": "백엔드 개발",
        "old_home": "수원 영통", "new_home": "성남 분당",
        "old_tool": "에버노트", "new_tool": "노션", "tool_kind": "메모",
        "spouse": "아내", "spouse_job": "약사", "child": "딸", "child_name": "서연",
        "mother_city": "대구", "pet": "고양이", "pet_name": "나비",
        "rest": "을지면옥", "cuisine": "평양냉면", "dish": "물냉면",
        "coffee": "아이스 아메리카노", "dislike": "오이", "sport": "배드민턴",
        "sport_place": "동네 체육관", "trip": "제주도", "hotel": "애월 바닷가의 작은 펜션",
        "doctor_dept": "정형외과", "doctor": "김", "doctor_reason": "허리 통증",
        "concert": "아이유", "item": "로봇청소기",
        "item_problem": "일주일 만에 충전이 안 돼서 교환 신청했어",
        "allergy": "페니실린", "dist_co1": "카카오", "dist_co2": "쿠팡",
        "dist_friend": "민수", "dist_city": "부산", "dist_tool": "옵시디언",
    },
    {
        "old_co": "동네 영어 학원", "new_co": "마포의 한 초등학교", "role": "영어 강사",
        "old_home": "부산 해운대", "new_home": "서울 마포",
        "old_tool": "엑셀", "new_tool": "구글 시트", "tool_kind": "가계부",
        "spouse": "남편", "spouse_job": "소방관", "child": "아들", "child_name": "준호",
        "mother_city": "광주", "pet": "강아지", "pet_name": "콩이",
        "rest": "할매국밥", "cuisine": "돼지국밥", "dish": "수육백반",
        "coffee": "바닐라 라떼", "dislike": "고수", "sport": "요가",
        "sport_place": "집 근처 요가원", "trip": "강릉", "hotel": "경포대 근처 호텔",
        "doctor_dept": "치과", "doctor": "박", "doctor_reason": "사랑니",
        "concert": "성시경", "item": "전기자전거",
        "item_problem": "배터리 충전이 안 돼서 가게에서 무료로 바꿔 줬어",
        "allergy": "복숭아", "dist_co1": "대형 학원", "dist_co2": "영어 유치원",
        "dist_friend": "지은", "dist_city": "대전", "dist_tool": "뱅크샐러드",
    },
]

MESSAGES: dict[str, list[str]] = {
    "old_job": [
        "나는 {old_co}에서 {role} 일을 하고 있어. 벌써 3년째야.",
        "오늘도 {old_co}에서 회의만 하다 끝났어. {role} 일은 반이 회의인 것 같아.",
    ],
    "new_job": [
        "큰 소식! {old_co} 그만두고 오늘부터 {new_co}에 출근했어.",
        "이직 확정됐어. 오늘 {new_co} 첫 출근 했고, {old_co} 퇴사 절차는 다 끝났어.",
    ],
    "dist_job": ["{dist_friend} 씨 말로는 {dist_co1} 그만두고 {dist_co2}에 들어갔대. 연봉이 꽤 올랐다더라."],
    "old_home": [
        "우리 집은 {old_home}에 있어. 역까지 걸어서 5분이라 편해.",
        "{old_home}에 산 지 벌써 4년이 넘었어. 집주인 아저씨가 좋은 분이야.",
    ],
    "new_home": [
        "드디어 이사 끝났어! 이제 {new_home}에 살아. 박스가 아직 산더미야.",
        "주소 바뀌었어. {old_home}에서 {new_home}에 있는 새 집으로 이사했어.",
    ],
    "dist_home": ["다음 달에 {dist_friend} 씨가 {dist_city} 쪽으로 이사 간대서 주말에 송별회 하기로 했어."],
    "old_tool": ["{tool_kind} 쓸 때는 몇 년째 {old_tool} 쓰고 있어. 익숙해서 편해."],
    "new_tool": [
        "이번 주부터 {tool_kind} 쓸 때 {new_tool}로 바꿨어. {old_tool} 이제 안 써.",
        "한 달 써 보고 {tool_kind} 앱을 {new_tool}로 정했어. 전보다 훨씬 편해.",
    ],
    "dist_tool": ["회사 동료가 자꾸 {dist_tool} 써 보라고 하는데 너무 복잡해 보여."],
    "spouse": [
        "우리 {spouse} 직업이 {spouse_job}인데 요즘 너무 바빠서 얼굴 보기가 힘들어.",
        "오늘 {spouse} 완전 지쳐서 들어왔어. {spouse_job} 일이 정말 힘든 것 같아.",
    ],
    "child": [
        "오늘 우리 {child} {child_name}, 유치원에서 칭찬 스티커를 받아 왔어. 엄청 자랑하더라.",
        "요즘 {child_name} 녀석이 \"왜?\"만 물어봐. 우리 {child} 호기심이 끝이 없어.",
    ],
    "mother": ["엄마는 {mother_city}에서 혼자 사시는데 매주 일요일 밤마다 전화 드려."],
    "pet": [
        "우리 집 {pet} {pet_name}, 요즘 살이 쪄서 수의사 선생님이 다이어트하래.",
        "{pet_name} 때문에 또 새벽 5시에 깼어. 우리 {pet} 진짜 부지런해.",
    ],
    "dist_pet": ["옆집에서 진돗개를 키우기 시작했는데 아침마다 짖어."],
    "rest": [
        "또 {rest} 다녀왔어. {dish} 진짜 맛있어. {cuisine} 중에서는 여기가 최고야.",
        "오늘은 가족끼리 {rest}. 늘 {dish} 시켜. {cuisine}는 역시 여기지.",
    ],
    "dist_rest": ["{dist_friend} 씨는 {cuisine} 먹으려면 역 앞 다른 집이 낫다는데 나는 아직 안 가 봤어."],
    "coffee": ["커피는 항상 {coffee}만 마셔. 다른 건 입에 안 맞아."],
    "dislike": ["나는 어릴 때부터 {dislike} 못 먹어. 냄새만 맡아도 싫어."],
    "sport": ["요즘 {sport}에 빠져서 주말마다 {sport_place}에 가."],
    "trip": [
        "지금 {trip} 왔어! 숙소는 {hotel}인데 분위기 완전 좋아.",
        "연차 내고 {trip} 여행 왔어. 오늘 밤은 {hotel}에서 자.",
    ],
    "dist_trip": ["우리 {spouse} 말로는 여름휴가 때 일본 가고 싶대. 아직 못 정했어."],
    "doctor": [
        "오늘 반차 내고 {doctor_dept}에 갔어. {doctor_reason} 때문에 {doctor} 선생님한테 진료받았는데 별거 아니래.",
        "{doctor_reason} 때문에 결국 {doctor_dept} 다녀왔어. {doctor} 선생님이 엄청 친절하셨어.",
    ],
    "dist_doctor": ["아빠가 고향 병원에서 검사를 받는다고 해서 인터넷으로 예약을 도와드렸어."],
    "concert": ["오늘 밤 {concert} 콘서트 다녀왔어! 목이 다 쉬었어."],
    "item_buy": ["고민하던 {item} 드디어 샀어. 오늘 도착했어."],
    "item_problem": ["있잖아, 저번에 산 {item} 말이야, {item_problem}."],
    "allergy": ["혹시 몰라서 말해 두는데 나 {allergy} 알레르기 있어."],
}

FILLERS: list[str] = [
    "오늘 날씨가 좋아서 빨래가 잘 말랐어.",
    "늦잠 자서 아침을 못 먹었어.",
    "점심은 편의점 김밥으로 때웠어.",
    "밤에 드라마 두 편을 연달아 봐 버렸어.",
    "오늘 야근해서 9시 넘어서 퇴근했어.",
    "주말에 아무 데도 안 가고 집에서 뒹굴었어.",
    "휴대폰 액정이 또 깨졌어. 이번 달만 두 번째야.",
    "저녁에 김치찌개 끓였는데 꽤 맛있게 됐어.",
    "마트 계산대 줄이 엄청 길더라.",
    "또 비 와. 빨래가 하나도 안 말라.",
    "윗집이 공사 중이라 아침부터 드릴 소리가 나.",
    "월급날이라 카드값부터 냈어.",
]

SMALLTALK: list[str] = [
    "오늘 너무 피곤하다. 회의가 길었어.",
    "밖에 비가 엄청 와.",
    "점심 먹었더니 졸려.",
    "드디어 금요일이다!",
    "방금 집에 왔어.",
    "지하철이 너무 붐벼서 계속 서서 왔어.",
    "요즘 자꾸 깜빡깜빡해.",
    "커피를 너무 많이 마셨나 봐.",
    "애가 겨우 잠들었어.",
    "이번 주 진짜 빨리 지나갔다.",
]

CONNECTORS: list[str] = ["그런데 ", "아 맞다, ", "하나 물어볼게. ", ""]

QUESTIONS: dict[str, dict[str, tuple[list[str], list[str], str]]] = {
    "single": {
        "spouse": (["우리 {spouse} 직업이 뭐였지?", "우리 {spouse} 무슨 일 해?"], ["spouse"], "{spouse_job}"),
        "child": (["우리 {child} 이름이 뭐야?"], ["child"], "{child_name}"),
        "pet": (["우리 집 {pet} 이름이 뭐였지?"], ["pet"], "{pet_name}"),
        "rest": (["내가 제일 좋아하는 {cuisine} 집 이름이 뭐야?"], ["rest"], "{rest}"),
        "allergy": (["나 무슨 알레르기 있다고 했지?"], ["allergy"], "{allergy}"),
        "doctor": (["{doctor_dept}에서 진료해 준 선생님 성이 뭐야?"], ["doctor"], "{doctor} 선생님"),
        "hotel": (["{trip} 갔을 때 어디서 묵었어?"], ["trip"], "{hotel}"),
        "concert": (["내가 누구 콘서트에 갔었지?"], ["concert"], "{concert}"),
        "sport_place": (["나 평소에 운동하러 어디 가?"], ["sport"], "{sport_place}"),
        "mother": (["엄마는 어디 사셔?"], ["mother"], "{mother_city}"),
    },
    "multi": {
        "item": (["저번에 산 {item}, 그 뒤로 어떻게 됐어?"], ["item_buy", "item_problem"], "{item_problem}"),
        "homes": (["이사 전이랑 후에 각각 어디 살았지?"], ["old_home", "new_home"], "{old_home}→{new_home}"),
    },
    "temporal": {
        "trip": (["{trip}에 언제 갔었지?"], ["trip"], "{trip_date}"),
        "doctor": (["지난주에 병원 무슨 과에 갔었지?"], ["doctor"], "{doctor_dept}"),
        "concert": (["나 지난 주말에 뭐 했지?"], ["concert"], "{concert}"),
        "new_job": (["{new_co}에 언제부터 출근했지?"], ["new_job"], "{new_job_date}"),
        "new_home": (["이사한 게 언제쯤이었지?"], ["new_home"], "{new_home_date}"),
    },
    "update": {
        "job_now": (["나 지금 어디서 일하고 있지?"], ["new_job"], "{new_co}"),
        "job_before": (["이직하기 전에는 어디서 일했지?"], ["old_job"], "{old_co}"),
        "home_now": (["나 지금 어디 살아?"], ["new_home"], "{new_home}"),
        "home_before": (["이사 오기 전에는 어디 살았지?"], ["old_home"], "{old_home}"),
        "tool_now": (["요즘 {tool_kind} 쓸 때 뭐 써?"], ["new_tool"], "{new_tool}"),
        "tool_before": (["예전에는 {tool_kind} 쓸 때 뭐 썼지?"], ["old_tool"], "{old_tool}"),
    },
    "preference": {
        "coffee": (["커피 한 잔 시켜 줘. 내가 평소에 마시는 걸로."], ["coffee"], "{coffee}"),
        "dislike": (["오늘 저녁 배달시키려는데 내가 못 먹는 거 뭐였지?"], ["dislike"], "{dislike}"),
        "sport": (["주말에 운동 좀 하고 싶은데 내가 좋아하는 운동이 뭐였지?"], ["sport"], "{sport}"),
    },
    "chatter": {
        "rest": (["저번에 말한 {cuisine} 집 이름이 뭐였더라?"], ["rest"], "{rest}"),
        "spouse": (["우리 {spouse} 무슨 일 한다고 했더라?"], ["spouse"], "{spouse_job}"),
        "pet": (["우리 {pet} 이름이 뭐였더라?"], ["pet"], "{pet_name}"),
        "trip": (["{trip} 간 게 언제였더라?"], ["trip"], "{trip_date}"),
        "job_now": (["나 지금 다니는 데가 어디였더라?"], ["new_job"], "{new_co}"),
        "coffee": (["내가 늘 마시는 커피가 뭐였더라?"], ["coffee"], "{coffee}"),
        "allergy": (["나 무슨 알레르기였더라?"], ["allergy"], "{allergy}"),
    },
}

JOIN = " "
DATE = "{y}년 {m}월 {d}일"
# fmt: on
