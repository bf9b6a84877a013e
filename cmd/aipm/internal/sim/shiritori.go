package sim

import (
	"strings"
	"unicode/utf8"
)

// simWords is the simulated agent's shiritori vocabulary: everyday hiragana words, none
// ending in ん. It is large and spread over the syllabary so that two sims can chain more
// than twenty words from りんご without a dead end (TestSimShiritoriChain checks it).
var simWords = strings.Fields(`
あさがお あひる あめ あり あしか あたま あくび あじさい あんず あゆ
いぬ いちご いるか いす いかだ いのしし いわし いちょう いけす いも
うさぎ うし うま うちわ うみ うぐいす うきわ うなぎ うめ
えび えのぐ えだまめ えんぴつ えりまき えき えさ
おに おかし おりがみ おにぎり おもちゃ おばけ おでこ おの おけ
かめ かさ からす かに かえる かぼちゃ かまきり かき かかし かたつむり
きつね きのこ きって きもの きゅうり きく きのみ きつつき
くま くじら くるま くつした くし くり くさ くわがた くちばし
けむし けいと けしごむ けむり けやき けいさつ
こあら こま こども ことり こけし こおり こいのぼり こたつ こおろぎ
さる さかな さくら さいふ さとう さら さんま さい さつまいも
しか しまうま しお しろ しゃもじ しいたけ しっぽ しじみ しずく
すいか すずめ すし すな すもう すみれ すず すいとう
せみ せんす せなか せんたくき せんべい せきせいいんこ
そら そば そり そうじき そで そよかぜ
たぬき たまご たこ たいこ たけのこ たわし たき たい たから
ちず ちくわ ちょう ちりとり ちから ちきゅう ちどり ちまき
つくえ つみき つばめ つり つき つらら つめ つばき つくし
てがみ てぶくろ てつぼう てら てんぐ てすり てじな てちょう
とけい とら とまと とんぼ とり とびら とうもろこし とかげ とさか
なす なべ なし なわとび なつ なみ なっとう なまず なめこ
にわとり にじ にもつ にんぎょう にく にわ にぼし
ぬいぐるみ ぬりえ ぬま ぬの ぬりかべ
ねこ ねずみ ねぎ ねじ ねっこ ねぶくろ ねったいぎょ
のり のこぎり のはら のみもの のうさぎ のど
はさみ はし はな はと はち はがき はなび はまぐり はたけ はちみつ
ひつじ ひまわり ひこうき ひよこ ひも ひげ ひばり ひのき
ふね ふくろう ふえ ふぐ ふきのとう ふじ ふた
へび へちま へそ へいたい へや へら
ほし ほたる ほうき ほね ほたて ほっけ ほうれんそう
まくら まど まめ まつり まと まり まぐろ まつぼっくり
みみ みず みそ みち みつばち みのむし みかづき みどり
むし むぎ むら むかで むすめ むぎちゃ むささび
めだか めがね めだま めじろ めいし めばな
もも もち もみじ もぐら ものさし もやし もずく
やぎ やさい やま やね やり やかた やどかり やまびこ
ゆき ゆめ ゆび ゆかた ゆり ゆのみ ゆりかご
よる よろい ようかい よこ よっと ようせい よもぎ
らっぱ らくだ らっこ らむね らいちょう らっかせい
りんご りす りか りょうり りく りんどう
るす るり るつぼ るーぺ るーれっと るびー るーと
れいぞうこ れきし れんが れたす れっしゃ れいか
ろうそく ろば ろけっと ろうか ろぼっと ろてんぶろ
わに わなげ わかめ わた わし わさび わらび わたげ
がっこう がいこつ がちょう がけ がまぐち
ぎたー ぎょうざ ぎゅうにゅう ぎんが ぎふ
ぐみ ぐらす ぐんて ぐりる
げた げーむ げじげじ げたばこ
ごりら ごま ごみ ごぼう ごまだんご ごむ
ざる ざりがに ざっし ざくろ
じどうしゃ じしゃく じてんしゃ じゃがいも じょうろ
ずつう ずわいがに ずいき
ぜりー ぜんまい ぜにがめ
ぞう ぞうり
だるま だんご だちょう だいず だがし
でんわ でんしゃ でぐち でんち
どんぐり どせい どろ どうぶつ どあ どじょう どんぶり
ばなな ばった ばら ばけつ ばす ばいく
びわ びじゅつ びーだま びすけっと びわこ
ぶた ぶどう ぶらんこ ぶたい ぶろっく ぶり
べんとう べる べっど べんち べに
ぼうし ぼーる ぼたもち ぼうず
ぱんだ ぱせり ぱじゃま ぱんつ ぱいなっぷる ぱすた
ぴあの ぴえろ ぴざ
ぷーる ぷりんと ぷりずむ
ぺんき ぺだる
ぽすと ぽけっと ぽんぷ
`)

// simHiragana folds a katakana letter to its hiragana twin, so that a partner who writes
// リンゴ is answered like one who writes りんご.
func simHiragana(r rune) rune {
	if r >= 'ァ' && r <= 'ヶ' {
		return r - ('ァ' - 'ぁ')
	}
	return r
}

// simKanaWord is a word in hiragana (katakana folded); other characters are kept.
func simKanaWord(w string) string {
	return strings.Map(simHiragana, strings.TrimSpace(w))
}

func simIsKana(r rune) bool { return r >= 'ぁ' && r <= 'ゖ' }

// simSmallKana maps small kana to the big ones a next word starts with (ちょう → う,
// かぼちゃ → や).
var simSmallKana = map[rune]rune{'ぁ': 'あ', 'ぃ': 'い', 'ぅ': 'う', 'ぇ': 'え', 'ぉ': 'お', 'っ': 'つ', 'ゃ': 'や', 'ゅ': 'ゆ', 'ょ': 'よ', 'ゎ': 'わ', 'ゕ': 'か', 'ゖ': 'け'}

// simFirstKana is the first kana of a word (0 if it has none).
func simFirstKana(w string) rune {
	for _, r := range w {
		if r = simHiragana(r); simIsKana(r) {
			return r
		}
	}
	return 0
}

// simLastKana is the kana the next word must start with: the word's last kana, past any
// long-vowel mark (ー) or punctuation, with a small kana read as the big one.
func simLastKana(w string) rune {
	for len(w) > 0 {
		r, size := utf8.DecodeLastRuneInString(w)
		w = w[:len(w)-size]
		r = simHiragana(r)
		if !simIsKana(r) {
			continue
		}
		if big, ok := simSmallKana[r]; ok {
			return big
		}
		return r
	}
	return 0
}

// simUnvoiced maps a voiced or semi-voiced kana to its plain one (ご → こ, ぷ → ふ); the
// word list has few words starting with some voiced kana, so they fall back to it.
func simUnvoiced(r rune) rune {
	const voiced, plain = "がぎぐげござじずぜぞだぢづでどばびぶべぼぱぴぷぺぽ", "かきくけこさしすせそたちつてとはひふへほはひふへほ"
	p := []rune(plain)
	i := 0
	for _, v := range voiced {
		if v == r {
			return p[i]
		}
		i++
	}
	return r
}

// simStarts lists the kana a word after one ending in k may start with, preferred first.
func simStarts(k rune) []rune {
	if u := simUnvoiced(k); u != k {
		return []rune{k, u}
	}
	return []rune{k}
}

// simNextWord is the sim's shiritori move after prev: an unused word of simWords starting
// with prev's last kana (or, if there is none, its unvoiced form) and not ending in ん.
// Among those it takes the one that leaves the partner the most unused words to answer
// with, ties in list order, so that a game is deterministic and rarely runs dry. used
// holds the words said so far, in hiragana. ok is false when no word fits (or prev ends
// in ん: prev's speaker lost).
func simNextWord(prev string, used map[string]bool) (word string, ok bool) {
	k := simLastKana(prev)
	if k == 0 || k == 'ん' {
		return "", false
	}
	for _, start := range simStarts(k) {
		best, bestScore := "", -1
		for _, w := range simWords {
			if used[w] || simFirstKana(w) != start || simLastKana(w) == 'ん' {
				continue
			}
			if score := simSuccessors(w, used); score > bestScore {
				best, bestScore = w, score
			}
		}
		if best != "" {
			return best, true
		}
	}
	return "", false
}

// simSuccessors counts the unused words that could follow w.
func simSuccessors(w string, used map[string]bool) int {
	n := 0
	starts := simStarts(simLastKana(w))
	for _, x := range simWords {
		if x == w || used[x] {
			continue
		}
		f := simFirstKana(x)
		for _, s := range starts {
			if f == s {
				n++
				break
			}
		}
	}
	return n
}
