"""Parallel English/Japanese sentences: what the embedder's language means are measured on.

Everyday sentences on unrelated topics, each said in both languages. Averaging the vectors
of one side gives that language's mean direction for whichever embedder runs them; what the
sentences say cancels out between the two sides, the language does not. Written for this
purpose, not taken from any evaluation set; only their mean is used, never a single pair.
"""

from __future__ import annotations

PARALLEL: tuple[tuple[str, str], ...] = (
    ("The train was late this morning.", "今朝は電車が遅れた。"),
    ("Please send me the report by tomorrow.", "明日までに報告書を送ってください。"),
    ("The weather will be sunny on the weekend.", "週末は晴れる予報だ。"),
    ("We moved to a new apartment last spring.", "去年の春に新しいアパートに引っ越した。"),
    ("The library closes at eight in the evening.", "図書館は夜八時に閉まる。"),
    ("He forgot his umbrella at the restaurant.", "彼はレストランに傘を忘れた。"),
    ("The server restarts automatically every night.", "サーバーは毎晩自動的に再起動する。"),
    ("Our budget for the project was approved.", "プロジェクトの予算が承認された。"),
    ("She is learning to play the guitar.", "彼女はギターを習っている。"),
    ("The printer on the second floor is out of paper.", "二階のプリンターは紙切れだ。"),
    ("I usually walk to work.", "普段は歩いて通勤している。"),
    ("The contract expires at the end of the year.", "契約は年末に切れる。"),
    ("Tickets for the concert sold out quickly.", "コンサートのチケットはすぐに売り切れた。"),
    ("The new version fixes a memory leak.", "新しいバージョンでメモリリークが直った。"),
    ("My brother lives in Osaka with his family.", "兄は家族と大阪に住んでいる。"),
    ("The museum is free on the first Sunday of the month.", "美術館は毎月第一日曜日が無料だ。"),
    ("We need to buy milk and eggs.", "牛乳と卵を買う必要がある。"),
    ("The meeting was moved to next week.", "会議は来週に延期された。"),
    (
        "The password must be at least twelve characters long.",
        "パスワードは十二文字以上にする必要がある。",
    ),
    ("The children played in the park until dark.", "子どもたちは暗くなるまで公園で遊んだ。"),
    ("The flight to Sapporo takes about ninety minutes.", "札幌までの飛行機は約九十分かかる。"),
    ("Customer complaints dropped after the redesign.", "デザインを変えてから顧客の苦情が減った。"),
    ("The hotel offers breakfast from seven o'clock.", "ホテルの朝食は七時からだ。"),
    ("Backups are stored in a separate region.", "バックアップは別のリージョンに保存されている。"),
    ("He prefers working late at night.", "彼は夜遅くに働くのが好きだ。"),
    ("The store is closed for renovation.", "店は改装のため休業している。"),
    ("We adopted a dog from the shelter.", "保護施設から犬を引き取った。"),
    ("The invoice has not been paid yet.", "請求書はまだ支払われていない。"),
    ("The river floods almost every summer.", "その川はほぼ毎年夏に氾濫する。"),
    ("Her grandmother grows tomatoes in the garden.", "彼女の祖母は庭でトマトを育てている。"),
    ("The test suite runs on every pull request.", "テストはプルリクエストのたびに実行される。"),
    ("I lost my keys on the way home.", "帰り道で鍵をなくした。"),
    ("The bakery sells bread until noon.", "そのパン屋は昼までパンを売っている。"),
    ("The team celebrated the launch with a dinner.", "チームはリリースを夕食会で祝った。"),
    ("The elevator is under maintenance today.", "今日はエレベーターが点検中だ。"),
    ("Tomorrow's lecture is about ancient history.", "明日の講義は古代史についてだ。"),
    ("The app crashes when the network is slow.", "ネットワークが遅いとアプリが落ちる。"),
    ("My neighbour plays the piano every evening.", "隣人は毎晩ピアノを弾いている。"),
    ("We will visit Kyoto in the autumn.", "秋に京都を訪れる予定だ。"),
    ("The doctor told him to sleep more.", "医者は彼にもっと寝るように言った。"),
)
"""(English, Japanese) pairs."""
