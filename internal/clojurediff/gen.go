package main

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
)

// gen generates PTC-Lisp expressions that Clojure 1.11 also reads: calls
// of the sequence, map, set, string, regex and number builtins, and of the
// forms models write (threading, destructuring, for, loop), over small
// literal data. Maps are written with their keys in order, so Clojure's
// array maps and PTC-Lisp's sorted maps iterate them alike.
type gen struct {
	r *rand.Rand
}

func (g *gen) pick(xs ...string) string { return xs[g.r.IntN(len(xs))] }

func (g *gen) num() string {
	return g.pick("0", "1", "2", "3", "-1", "5", "10", "7", "1.5", "-2.5", "0.0", "100", "3")
}

func (g *gen) str() string {
	return g.pick(`""`, `"a"`, `"abc"`, `"a,b,c"`, `" x "`, `"Hello World"`, `"b"`, `"42"`, `"ab"`)
}

func (g *gen) kw() string { return g.pick(":a", ":b", ":c", ":id", ":name") }

func (g *gen) scalar() string {
	switch g.r.IntN(7) {
	case 0, 1:
		return g.num()
	case 2:
		return g.str()
	case 3:
		return g.kw()
	}
	return g.pick("nil", "true", "false")
}

func (g *gen) join(n int, item func() string) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = item()
	}
	return strings.Join(parts, " ")
}

func (g *gen) vec(d int) string {
	return "[" + g.join(g.r.IntN(5), func() string { return g.val(d + 1) }) + "]"
}

func (g *gen) nums() string {
	items := g.join(g.r.IntN(7), g.num)
	if g.r.IntN(2) == 0 {
		return "[" + items + "]"
	}
	return "'(" + items + ")"
}

func (g *gen) mp(d int) string {
	keys := []string{":a", ":b", ":c", ":id", ":name"}
	g.r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	keys = keys[:g.r.IntN(4)]
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + " " + g.val(d+1)
	}
	return "{" + strings.Join(parts, " ") + "}"
}

func (g *gen) rec() string {
	return fmt.Sprintf("{:id %d :n %s :name %s :tags [%s]}", 1+g.r.IntN(4), g.num(), g.str(), g.join(g.r.IntN(3), g.kw))
}

func (g *gen) recs() string { return "[" + g.join(g.r.IntN(5), g.rec) + "]" }

func (g *gen) set() string {
	seen := map[string]bool{}
	var items []string
	for range g.r.IntN(4) {
		if s := g.scalar(); s != "nil" && !seen[s] {
			seen[s] = true
			items = append(items, s)
		}
	}
	slices.Sort(items)
	return "#{" + strings.Join(items, " ") + "}"
}

func (g *gen) val(d int) string {
	if d > 2 {
		return g.scalar()
	}
	switch g.r.IntN(6) {
	case 0, 1:
		return g.scalar()
	case 2:
		return g.vec(d)
	case 3:
		return g.mp(d)
	case 4:
		return g.nums()
	}
	return g.recs()
}

func (g *gen) coll() string {
	switch g.r.IntN(9) {
	case 0, 1:
		return g.nums()
	case 2:
		return g.recs()
	case 3:
		return g.vec(0)
	case 4:
		return g.mp(0)
	case 5:
		return g.str()
	case 6:
		return "nil"
	case 7:
		return fmt.Sprintf("(range %d)", g.r.IntN(7))
	}
	return "'()"
}

func (g *gen) f1() string {
	return g.pick("inc", "dec", "str", "identity", "count", "even?", "odd?", "keyword", "name", ":a", ":id", ":n",
		"#(* 2 %)", "first", "vector", "nil?", "some?", "pos?", "neg?", "zero?", "string?", "number?", "#(> % 2)",
		"seq", "empty?", "vec", "#(if (even? %) nil %)", "(fnil inc 0)", "(partial + 1)", "(comp inc :n)",
		"(juxt :id :n)", "abs", "boolean", "#(quot % 2)", "set", "prn-str")
}

func (g *gen) f2() string {
	return g.pick("+", "-", "*", "max", "min", "conj", "str", "vector", "list", "merge", "concat", "cons",
		"#(+ %1 (* 2 %2))", "into", "compare", "=", "list*")
}

func (g *gen) idx() string  { return g.pick("0", "1", "2", "3", "-1", "5") }
func (g *gen) size() string { return g.pick("1", "2", "3") }
func (g *gen) cmp() string  { return g.pick(">", "<", "compare", "#(compare %2 %1)") }

func (g *gen) text() string {
	return g.pick(`""`, `"a"`, `"abc"`, `"a,b,,c"`, `" x  y "`, `"Hello World"`, `"a\nb\n"`, `"42"`, `"3.5"`,
		`"-7"`, `"ab12cd345"`, `"x=1;y=22"`, `"aAbB"`, `"  "`, `"e\u00e9"`, "nil")
}

func (g *gen) regex() string {
	return g.pick(`#"\d+"`, `#"[a-z]+"`, `#"(\w)=(\d+)"`, `#","`, `#"\s+"`, `#"b"`, `#"^a"`, `#"(a)|(b)"`,
		`#"[aeiou]"`, `#"(?i)a"`)
}

// templates are the expression shapes, each drawing its parts at random.
func (g *gen) templates() []func() string {
	f := fmt.Sprintf
	return []func() string{
		func() string { return f("(map %s %s)", g.f1(), g.coll()) },
		func() string { return f("(map %s %s %s)", g.f2(), g.coll(), g.coll()) },
		func() string { return f("(mapv %s %s)", g.f1(), g.coll()) },
		func() string { return f("(%s %s %s)", g.pick("filter", "filterv", "remove", "keep"), g.f1(), g.coll()) },
		func() string { return f("(keep-indexed #(when (even? %%1) %%2) %s)", g.coll()) },
		func() string { return f("(map-indexed vector %s)", g.coll()) },
		func() string {
			return f("(mapcat %s %s)", g.pick("identity", "seq", "vals", "#(repeat 2 %)", "reverse", "#(vector % %)"), g.coll())
		},
		func() string { return f("(%s %s %s)", g.pick("reduce", "reductions"), g.f2(), g.coll()) },
		func() string { return f("(%s %s %s %s)", g.pick("reduce", "reductions"), g.f2(), g.val(0), g.coll()) },
		func() string { return f("(group-by %s %s)", g.f1(), g.coll()) },
		func() string { return f("(frequencies %s)", g.coll()) },
		func() string { return f("(sort %s)", g.coll()) },
		func() string { return f("(sort %s %s)", g.cmp(), g.coll()) },
		func() string { return f("(sort-by %s %s)", g.f1(), g.coll()) },
		func() string { return f("(sort-by %s %s %s)", g.f1(), g.cmp(), g.coll()) },
		func() string { return f("(%s %s %s)", g.pick("partition", "partition-all"), g.size(), g.coll()) },
		func() string {
			return f("(%s %s %s %s)", g.pick("partition", "partition-all"), g.size(), g.size(), g.coll())
		},
		func() string { return f("(partition %s %s %s %s)", g.size(), g.size(), g.coll(), g.coll()) },
		func() string { return f("(partition-by %s %s)", g.f1(), g.coll()) },
		func() string { return f("(%s %s)", g.pick("distinct", "dedupe"), g.coll()) },
		func() string {
			return f("(%s %s %s)", g.pick("take", "drop", "take-last", "drop-last", "split-at"), g.idx(), g.coll())
		},
		func() string { return f("(take-nth %s %s)", g.size(), g.coll()) },
		func() string {
			return f("(%s %s %s)", g.pick("take-while", "drop-while", "split-with"), g.f1(), g.coll())
		},
		func() string {
			return f("(%s %s)", g.pick("first", "second", "last", "rest", "next", "butlast", "ffirst", "nfirst",
				"fnext", "nnext", "seq", "vec", "set", "count", "empty?", "not-empty", "reverse", "flatten",
				"empty", "keys", "vals", "apply +", "boolean"), g.coll())
		},
		func() string { return f("(nth %s %s %s)", g.coll(), g.idx(), g.val(0)) },
		func() string { return f("(%s %s %s)", g.pick("nthnext", "nthrest"), g.coll(), g.idx()) },
		func() string { return f("(get %s %s)", g.coll(), g.pick(g.idx(), g.kw(), g.str())) },
		func() string { return f("(get %s %s %s)", g.coll(), g.pick(g.idx(), g.kw()), g.val(0)) },
		func() string {
			return f("(get-in %s [%s %s])", g.val(0), g.pick(g.idx(), g.kw()), g.pick(g.idx(), g.kw()))
		},
		func() string {
			return f("(assoc %s %s %s)", g.pick(g.mp(0), g.vec(0), "nil", g.nums()), g.pick(g.idx(), g.kw()), g.val(0))
		},
		func() string {
			return f("(assoc-in %s [%s %s] %s)", g.pick(g.mp(0), g.vec(0), "nil", g.recs()), g.pick(g.idx(), g.kw()), g.pick(g.idx(), g.kw()), g.val(0))
		},
		func() string {
			return f("(update %s %s %s)", g.pick(g.mp(0), g.vec(0), "nil", g.rec()), g.pick(g.idx(), g.kw()),
				g.pick("inc", "str", "(fnil inc 0)", "vector", "count", "#(conj (vec %) 1)"))
		},
		func() string {
			return f("(update-in %s [%s %s] %s)", g.pick(g.mp(0), g.vec(0), "nil", g.recs()), g.pick(g.idx(), g.kw()),
				g.pick(g.idx(), g.kw()), g.pick("inc", "str", "(fnil inc 0)", "vector", "count"))
		},
		func() string { return f("(dissoc %s %s)", g.pick(g.mp(0), g.rec(), "nil"), g.kw()) },
		func() string {
			return f("(select-keys %s [%s %s])", g.pick(g.mp(0), g.rec(), g.vec(0), "nil"), g.pick(g.idx(), g.kw()), g.kw())
		},
		func() string {
			return f("(merge %s %s)", g.pick(g.mp(0), g.rec(), "nil"), g.pick(g.mp(0), g.rec(), "nil"))
		},
		func() string {
			return f("(merge-with %s %s %s)", g.f2(), g.pick(g.mp(0), g.rec(), "nil"), g.pick(g.mp(0), g.rec(), "nil"))
		},
		func() string { return f("(zipmap %s %s)", g.coll(), g.coll()) },
		func() string { return f("(into %s %s)", g.pick("[]", "{}", "#{}", g.vec(0), g.mp(0)), g.coll()) },
		func() string {
			return f("(conj %s %s)", g.pick("[]", "{}", "#{}", g.vec(0), g.mp(0), g.nums()), g.val(0))
		},
		func() string { return f("(%s %s %s)", g.pick("concat", "interleave"), g.coll(), g.coll()) },
		func() string { return f("(interpose %s %s)", g.scalar(), g.coll()) },
		func() string {
			return f("(contains? %s %s)", g.pick(g.mp(0), g.rec(), g.set(), g.str()), g.pick(g.idx(), g.kw(), g.str()))
		},
		func() string { return f("(find %s %s)", g.pick(g.mp(0), g.rec()), g.kw()) },
		func() string {
			return f("(%s %s %s)", g.pick("some", "every?", "not-any?", "not-every?"), g.f1(), g.coll())
		},
		func() string { return f("(apply %s %s)", g.f2(), g.coll()) },
		func() string { return f("(str/join %s %s)", g.pick(`", "`, `"-"`, `""`), g.coll()) },
		func() string { return f("(subs %s %s %s)", g.str(), g.pick("0", "1", "2"), g.pick("2", "3", "4")) },
		func() string { return f("(range %s %s %s)", g.num(), g.num(), g.pick("1", "2", "-1", "0.5", "3")) },
		func() string { return f("(repeat %s %s)", g.idx(), g.val(0)) },
		func() string {
			return f("(%s %s %s)", g.pick("+", "-", "*", "quot", "rem", "mod", "max", "min", "compare", "=", "==",
				"<", ">", "<=", "not="), g.num(), g.num())
		},
		func() string { return f("(update-vals %s %s)", g.pick(g.mp(0), g.rec(), "{}"), g.f1()) },
		func() string {
			return f("(update-keys %s %s)", g.pick(g.mp(0), g.rec(), "{}"), g.pick("name", "str", "keyword", "identity"))
		},
		func() string { return f("(subvec %s %s %s)", g.vec(0), g.idx(), g.idx()) },
		func() string {
			return f("(set/%s %s %s)", g.pick("union", "intersection", "difference"), g.set(), g.set())
		},
		func() string { return f("(set/%s %s [:id])", g.pick("index", "project"), g.recs()) },
		func() string {
			return f("(walk/postwalk %s %s)", g.pick("identity", "#(if (number? %) (inc %) %)", "#(if (string? %) (count %) %)"), g.val(0))
		},
		func() string { return f("(tree-seq coll? seq %s)", g.val(0)) },
		func() string {
			return f("((%s %s %s) %s)", g.pick("juxt", "comp", "every-pred", "some-fn"), g.f1(), g.f1(), g.val(0))
		},
		func() string { return f("(for [x %s :when (%s x)] x)", g.coll(), g.f1()) },
		func() string { return f("(for [x %s y %s] [x y])", g.coll(), g.coll()) },
		func() string { return f("(let [[a b & c] %s] [a b c])", g.coll()) },
		func() string { return f("(let [{:keys [a b] :or {a 9}} %s] [a b])", g.pick(g.mp(0), g.rec(), "nil")) },
		func() string {
			return f("(loop [x %s acc []] (if (seq x) (recur (rest x) (conj acc (first x))) acc))", g.coll())
		},
		func() string { return f("(->> %s (map %s) (filter %s))", g.coll(), g.f1(), g.f1()) },
		func() string {
			return f("(reduce (fn [acc {:keys [id n]}] (update acc id (fnil + 0) n)) {} %s)", g.recs())
		},
		func() string {
			return f("(->> %s (group-by :id) (map (fn [[k v]] [k (count v)])) (into {}))", g.recs())
		},
		func() string { return f(`(->> %s (sort-by :n) (map :name) (str/join ","))`, g.recs()) },
		func() string { return f("(->> %s (filter #(> (:n %%) 2)) (map :id) distinct sort)", g.recs()) },
		func() string {
			return f("(reduce-kv %s %s %s)", g.pick("(fn [m k v] (assoc m v k))", "(fn [a k v] (+ a (count (str k v))))"),
				g.pick("{}", "0"), g.pick(g.mp(0), g.rec(), g.vec(0)))
		},
		func() string { return f("(case %s 1 :one \"a\" :a (2 3) :few :other)", g.scalar()) },
		func() string { return f("(re-seq %s %s)", g.regex(), g.text()) },
		func() string { return f("(%s %s %s)", g.pick("re-find", "re-matches"), g.regex(), g.text()) },
		func() string { return f("(str/split %s %s)", g.text(), g.regex()) },
		func() string { return f("(str/split %s %s %s)", g.text(), g.regex(), g.pick("1", "2", "-1", "0", "3")) },
		func() string {
			return f("(str/replace %s %s %s)", g.text(), g.regex(), g.pick(`"-"`, `"$1"`, `"<$0>"`, "str/upper-case", `#(str "[" % "]")`))
		},
		func() string {
			return f("(str/%s %s %s)", g.pick("index-of", "last-index-of", "starts-with?", "ends-with?", "includes?"), g.text(), g.text())
		},
		func() string {
			return f("(%s %s)", g.pick("str/trim", "str/triml", "str/trimr", "str/trim-newline", "str/blank?",
				"str/capitalize", "str/lower-case", "str/upper-case", "str/split-lines", "parse-long", "parse-double",
				"parse-boolean", "count", "seq", "str/reverse", "frequencies", "vec", "first", "last", "keyword"), g.text())
		},
		func() string {
			return f("(take %s (iterate %s %s))", g.size(), g.pick("inc", "#(* 2 %)", "dec", "#(quot % 2)"), g.num())
		},
		func() string { return f("(take %s (cycle %s))", g.idx(), g.coll()) },
		func() string { return f("(as-> %s x (%s x) (vector x))", g.val(0), g.f1()) },
		func() string { return f("(if-some [x %s] [:some x] :none)", g.val(0)) },
		func() string { return f("(let [[_ & r :as all] %s] [r all])", g.coll()) },
		func() string { return f("(into (sorted-map) %s)", g.pick(g.mp(0), "[[:b 1] [:a 2]]", "{}")) },
		func() string {
			return f("(%s %s)", g.pick("int?", "integer?", "float?", "double?", "number?", "string?", "keyword?",
				"map?", "vector?", "set?", "coll?", "nil?", "some?", "true?", "false?", "boolean?", "fn?", "ifn?",
				"seqable?", "pos-int?", "nat-int?", "neg-int?", "zero?", "pos?", "neg?", "ident?", "indexed?",
				"counted?", "sorted?", "any?"), g.val(0))
		},
		func() string {
			return f("(%s %s %s)", g.pick("bit-and", "bit-or", "bit-xor", "bit-shift-left", "bit-shift-right", "rem",
				"mod", "quot", "max", "min", "*", "-", "+"), g.pick("7", "-7", "12", "0", "1"), g.pick("2", "-3", "5", "1"))
		},
		func() string {
			return f("(%s %s)", g.pick("inc", "dec", "-", "abs", "Math/floor", "Math/ceil", "Math/sqrt", "Math/log",
				"Math/exp", "Math/signum", "int", "long", "double", "str", "pr-str", "Math/abs", "num"),
				g.pick("7", "-7", "2.5", "-2.5", "0", "0.0", "0.1", "1e3", "100000000000"))
		},
		func() string {
			return f("(format %s %s)", g.pick(`"%.1f"`, `"%5.2f"`, `"%d"`, `"%05d"`, `"%,d"`, `"%10s|"`, `"%-10s|"`,
				`"%x"`, `"%o"`, `"%e"`, `"%.3e"`, `"%b"`, `"%%"`, `"%+d"`), g.pick("7", "-7", "2.5", "12345678", `"s"`, "true", "0"))
		},
		func() string {
			return f("(cond-> %s (map? %s) (assoc :x 1) (vector? %s) (conj :v) true count)", g.val(0), g.pick("{}", "[]"), g.pick("[]", "{}"))
		},
		func() string {
			return f("(some-> %s %s %s)", g.pick(g.rec(), g.mp(0), "nil"), g.kw(), g.pick("str", "inc", "count", "vector"))
		},
		func() string {
			return f("(condp %s %s 1 :one 2 :two \"a\" :a :other)", g.pick("=", "<", ">"), g.pick(g.num(), g.str()))
		},
		func() string {
			return f("(if-let [x (%s %s)] [:yes x] :no)", g.pick("first", "seq", ":id", "second"), g.coll())
		},
		func() string { return f("(for [x %s :let [y (%s x)] :while y] [x y])", g.coll(), g.f1()) },
		func() string { return f("(%s :n %s)", g.pick("apply max-key", "apply min-key"), g.recs()) },
		func() string { return f("(sort-by (juxt %s %s) %s)", g.kw(), g.kw(), g.recs()) },
		func() string { return f("(into {} (map (juxt %s %s) %s))", g.kw(), g.kw(), g.recs()) },
		func() string {
			return f("(update-in %s [%s] %s %s)", g.pick(g.mp(0), g.rec(), "{}"), g.kw(), g.pick("+", "conj", "str", "(fnil + 0)"), g.num())
		},
		func() string {
			return f("(assoc %s %s %s %s %s)", g.pick(g.mp(0), g.vec(0), "nil"), g.pick(g.idx(), g.kw()), g.val(0), g.kw(), g.val(0))
		},
		func() string { return f("(merge-with %s %s %s %s)", g.f2(), g.mp(0), g.mp(0), g.mp(0)) },
		func() string { return f("(let [[[a b] c] %s] [a b c])", g.coll()) },
		func() string {
			return f("(let [{a :a {b :b} :c :as m} %s] [a b (count m)])", g.pick(g.mp(0), g.rec(), "nil"))
		},
		func() string {
			return f("(str/%s %s %s %s)", g.pick("replace", "replace-first"), g.text(), g.pick(`"a"`, `","`, `" "`, g.regex()), g.pick(`"-"`, `""`, `"$1"`))
		},
		func() string {
			return f("(mapv %s %s %s %s)", g.pick("vector", "+", "max", "str"), g.coll(), g.coll(), g.coll())
		},
		func() string {
			return f("(%s %s %s)", g.pick("mod", "rem", "quot", "/"), g.pick("-7", "7.5", "-2.5", "0.0", "9"), g.pick("2", "-2", "2.5", "0.5", "-3"))
		},
		func() string {
			return f("(%s %s)", g.pick("Math/round", "int", "long", "double", "Math/floor", "Math/ceil", "str", "pr-str"), g.pick("2.5", "-2.5", "0.5", "-0.5", "1e20", "1.0E-5", "123456789.123"))
		},
		func() string {
			return f("(letfn [(f [x] (if (%s x) x (f (%s x))))] (f %s))", g.pick("pos?", "zero?", "#(> % 3)"), g.pick("inc", "#(+ % 2)"), g.pick("-3", "0", "1"))
		},
	}
}

// expressions returns n distinct expressions drawn with seed.
func expressions(seed uint64, n int) []string {
	g := &gen{r: rand.New(rand.NewPCG(seed, 0))}
	ts := g.templates()
	seen := map[string]bool{}
	out := make([]string, 0, n)
	for tries := 0; len(out) < n && tries < 100*n; tries++ {
		e := ts[g.r.IntN(len(ts))]()
		if !seen[e] {
			seen[e] = true
			out = append(out, e)
		}
	}
	return out
}
