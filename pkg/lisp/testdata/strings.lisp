;; builtins_strings.go: strings, name, keyword, char
;; subs: code-point indices, clamped (Clojure throws)
[(subs "hello" 1 3) (subs "hello" 2) (subs "héllo" 1 3) (subs "abc" -1 10) (subs "abc" 2 1) (subs "abc" 5) (subs "" 0)]
;=> ["el" "llo" "él" "abc" "" "" ""]
---
(subs nil 1)
;=> nil
---
(subs "abc" "1")
;;; "type_error: 1:1: subs: expected integer, got string \"1\" \\(arg 2\\)"
---
(subs 42 1)
;;; "type_error: 1:1: subs: expected string, got 42 \\(arg 1\\)"
---
;; join: (sep coll) or (coll); nil elements are ""; other values print as str
[(join ", " [1 nil :a "s" 1.5]) (join [1 2]) (join "-" []) (join "-" nil) (join "," ["a"]) (join "," #{3 1 2}) (str/join "" "abc")]
;=> ["1, , :a, s, 1.5" "12" "" "" "a" "1,2,3" "abc"]
---
(clojure.string/join "/" (map inc [1 2 3]))
;=> "2/3/4"
---
(join "," 5)
;;; "type_error: 1:1: join: expected a collection, got 5 \\(arg 2\\)"
---
;; split on a literal string or a regex; trailing empty strings are dropped
[(split "a,b,,c,," ",") (str/split "a,b,,c,," #",") (split ",a" ",") (split "" ",") (split "abc" "") (split "," ",") (split "abc" ";")]
;=> [["a" "b" "" "c"] ["a" "b" "" "c"] ["" "a"] [""] ["a" "b" "c"] [] ["abc"]]
---
[(str/split "a b  c" #" +") (str/split "a1b22c" #"\d+") (str/split " a b " #" ") (str/split "abc" #"") (split "a::b::c" "::")]
;=> [["a" "b" "c"] ["a" "b" "c"] ["" "a" "b"] ["a" "b" "c"] ["a" "b" "c"]]
---
;; a limit keeps at most n parts; a negative limit keeps trailing empties
[(str/split "a,b,c" #"," 2) (split "a,b,c" "," 2) (str/split "a,b,,," #"," -1) (split "a,b,c" "," 1) (split "abc" "" 2)]
;=> [["a" "b,c"] ["a" "b,c"] ["a" "b" "" "" ""] ["a,b,c"] ["a" "bc"]]
---
[(split nil ",") (split "héllo wörld" " ") (split "x\ty" "\t")]
;=> [[] ["héllo" "wörld"] ["x" "y"]]
---
(split "a,b" 1)
;;; "type_error: 1:1: split: expected a string or regex separator, got 1 \\(arg 2\\)"
---
(split :a ",")
;;; "type_error: 1:1: split: expected string, got keyword :a \\(arg 1\\)"
---
[(split-lines "a\nb\r\nc\n\n") (split-lines "") (split-lines "one") (split-lines "a\r") (split-lines "\n\n") (split-lines nil)]
;=> [["a" "b" "c"] [""] ["one"] ["a\r"] [] []]
---
;; trim uses Java whitespace (a no-break space is not whitespace)
[(trim "  a b \n") (triml "  a ") (trimr " a  ") (count (trim "\u00a0a ")) (trim "") (trim nil) (trim-newline "abc\r\n\n") (trim-newline "a\n b")]
;=> ["a b" "a " " a" 2 "" nil "abc" "a\n b"]
---
(trim 5)
;;; "type_error: 1:1: trim: expected string, got 5 \\(arg 1\\)"
---
[(upper-case "abc é") (lower-case "ABC É") (upcase "x") (downcase "X") (capitalize "hELLO") (capitalize "") (capitalize "élan") (upper-case nil)]
;=> ["ABC É" "abc é" "X" "x" "Hello" "" "Élan" nil]
---
;; as Clojure, a number, boolean or keyword is worked on as its text;
;; a collection stays a type error (a model's slip for contains?)
[(upper-case :a) (upper-case 12) (includes? 123 "2") (starts-with? true "t") (index-of 1000 "0" 2) (replace 121 "1" "x")]
;=> [":A" "12" true true 2 "x2x"]
---
(upper-case [1 "a"])
;;; "type_error: 1:1: upper-case: expected string, got vector \\[1 \"a\"\\] \\(arg 1\\)"
---
[(starts-with? "abc" "ab") (starts-with? "abc" "") (starts-with? "abc" "b") (ends-with? "abc" "bc") (ends-with? "abc" "x") (starts-with? nil "a") (ends-with? nil "a")]
;=> [true true false true false false false]
---
;; includes? is for strings (use contains? for collections)
[(includes? "abc" "b") (includes? "abc" "") (includes? "abc" "d") (includes? nil "a") (str/includes? "héllo" "él")]
;=> [true true false false true]
---
(includes? "abc" :b)
;;; "type_error: 1:1: includes\\?: expected string, got keyword :b \\(arg 2\\)"
---
(includes? [1 2] 1)
;;; "type_error: 1:1: includes\\?: expected string, got vector \\[1 2\\] \\(arg 1\\)"
---
[(blank? nil) (blank? "") (blank? " \t\n") (blank? " a ") (blank? "\u00a0")]
;=> [true true true false false]
---
;; index-of / last-index-of: code-point indices, nil when absent
[(index-of "abcb" "b") (index-of "abcb" "b" 2) (index-of "abcb" "b" 3) (index-of "abc" "z") (index-of "abc" "b" 10) (index-of "abc" "" 10) (index-of "abc" "b" -5) (index-of "héllo" "l")]
;=> [1 3 3 nil nil 3 1 2]
---
[(last-index-of "abcb" "b") (last-index-of "abcb" "b" 2) (last-index-of "abcb" "b" 0) (last-index-of "abcb" "" 10) (last-index-of "abcb" "b" -1) (last-index-of "héllo" "l") (index-of nil "a")]
;=> [3 1 nil 4 nil 3 nil]
---
;; replace: a string match is literal, everywhere
[(replace "a.b.c" "." "-") (replace "aaa" "a" "bb") (replace "abc" "" "-") (replace "abc" "x" "y") (replace nil "a" "b") (str/replace "a$b" "$" "\\")]
;=> ["a-b-c" "bbbbbb" "-a-b-c-" "abc" nil "a\\b"]
---
;; a regex match takes $n group references (Java syntax) or a function of the match
[(replace "abc abc" #"(b)(c)" "$2$1") (replace "hello" #"l" "$0$0") (replace "a1b" #"\d" "\\$") (replace "abcdefghijk" #"(a)(b)(c)(d)(e)(f)(g)(h)(i)(j)(k)" "$11-$1x") (replace "x-y" #"(?<first>\w)-(\w)" "${first}+$2")]
;=> ["acb acb" "hellllo" "a$b" "k-ax" "x+y"]
---
[(replace "abc" #"b" upper-case) (replace "a1b22" #"\d+" (fn [m] (str (* 2 (parse-long m))))) (replace "abc" #"(b)" (fn [m] (pr-str m))) (replace "a.b" #"\." "!")]
;=> ["aBc" "a2b44" "a[\"b\" \"b\"]c" "a!b"]
---
(replace "x" #"x" "$1")
;;; "value_error: 1:1: replace: no group 1 in the pattern"
---
(replace "x" #"x" "a$")
;;; "value_error: 1:1: replace: illegal group reference"
---
(replace "abc" 1 "x")
;;; "type_error: 1:1: replace: expected a string or regex match, got 1 \\(arg 2\\)"
---
[(replace-first "aaa" "a" "b") (replace-first "abab" #"(a)(b)" "$2$1") (replace-first "xyz" #"q" "r") (str/replace-first "a-b-c" "-" "+")]
;=> ["baa" "baab" "xyz" "a+b-c"]
---
;; (replace smap coll) is clojure.core/replace
[(replace {1 :one 2 :two} [1 2 3]) (replace [:a :b :c] [0 2 5])]
;=> [[:one :two 3] [:a :c 5]]
---
[(str/reverse "abc") (str/reverse "héllo") (str/reverse "") (clojure.string/reverse nil)]
;=> ["cba" "olléh" "" nil]
---
[(str/escape "a&b<c" {"&" "&amp;" "<" "&lt;"}) (str/escape "abc" {"a" 1}) (escape "abc" (fn [c] (when (= c "b") "B")))]
;=> ["a&amp;b&lt;c" "1bc" "aBc"]
---
[(char 65) (char "a") (char 233)]
;=> ["A" "a" "é"]
---
(char "ab")
;;; "type_error: 1:1: char: expected an integer code point or a 1-char string"
---
;; name and keyword
[(name :a) (name "a") (name :a/b) (name :user-id) (name nil)]
;=> ["a" "a" "b" "user-id" nil]
---
(name 1)
;;; "type_error: 1:1: name: expected a keyword or string, got 1 \\(arg 1\\)"
---
[(namespace :a/b) (namespace :a) (namespace (keyword "ns" "n")) (namespace nil) (namespace :/)]
;=> ["a" nil "ns" nil nil]
---
(namespace "a/b")
;;; "type_error: 1:1: namespace: expected a keyword, got string \"a/b\" \\(arg 1\\)"
---
[(keyword "a") (keyword :a) (keyword nil) (keyword 1) (keyword "ns" "n") (keyword nil "n") (= (keyword "x") :x)]
;=> [:a :a nil nil :ns/n :n true]
---
(map name [:a :b "c"])
;=> ["a" "b" "c"]
---
;; flex keys on string-keyed host maps
;; @ctx {"users": [{"name": "  Ann "}, {"name": "bob"}]}
(map #(-> % :name trim capitalize) ctx/users)
;=> ["Ann" "Bob"]
---
;; @ctx {"csv": "id,name\n1,ann\n2,bob\n"}
(->> (split-lines ctx/csv) (remove #(starts-with? % "id,")) (map #(split % ",")) (map (fn [[id n]] {:id (parse-long id) :name n})))
;=> [{:id 1 :name "ann"} {:id 2 :name "bob"}]
---
;; building huge strings runs into the memory limit
;; @maxmemory 10000000
(let [s (apply str (repeat 100000 "a"))] (replace s "a" (apply str (repeat 200 "b"))))
;;; "memory_limit: .*memory limit exceeded"
---
;; @maxmemory 10000000
(loop [i 0 acc []] (if (< i 100) (recur (inc i) (conj acc (format "%1000000s" i))) (count acc)))
;;; "memory_limit: .*memory limit exceeded"
---
;; @maxmemory 10000000
(join "," (repeat 300000 "abcdefghijklmnopqrstuvwxyz0123456789abcd"))
;;; "memory_limit: .*memory limit exceeded"
---
;; @maxmemory 10000000
(count (split (str (format "%1000000s" "") (format "%1000000s" "")) ""))
;;; "memory_limit: .*memory limit exceeded"
---
;; a collection as the separator is the (join coll sep) mistake
(join ["a" "b"] ",")
;;; "type_error: 2:1: join: expected a string separator, got vector \\[\"a\" \"b\"\\] \\(arg 1\\)\n(?s:.*)hint: the separator comes first"
---
;; Java's one-to-many upper-case mappings
[(upper-case "straße") (upper-case "ﬁne") (.toUpperCase "groß") (format "%S" "ß")]
;=> ["STRASSE" "FINE" "GROSS" "SS"]
