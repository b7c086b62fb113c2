;; builtins_regex.go: parsing and regex
;; parse-long: exactly [+-]?digits fitting int64, else nil
[(parse-long "42") (parse-long "+5") (parse-long "-0") (parse-long "-17") (parse-long "9223372036854775807")]
;=> [42 5 0 -17 9223372036854775807]
---
[(parse-long " 5") (parse-long "5 ") (parse-long "5.0") (parse-long "99999999999999999999") (parse-long "") (parse-long "1_000") (parse-long "0x1F") (parse-long "+") (parse-long nil)]
;=> [nil nil nil nil nil nil nil nil nil]
---
;; a non-string (other than nil) is a type error, as Clojure's "Expected string"
(parse-long 5)
;;; "type_error: 2:1: parse-long: expected string, got 5 \\(arg 1\\)(.|\n)*already a number"
---
(parse-boolean true)
;;; "type_error: 1:1: parse-boolean: expected string, got true \\(arg 1\\)"
---
(parse-int "12")
;=> 12
---
;; parse-double: Java's decimal and hexadecimal grammar, NaN and ±Infinity, surrounding whitespace and a f/d suffix, as Clojure 1.11
[(parse-double "1.5") (parse-double "1.") (parse-double ".5") (parse-double "1e5") (parse-double "+1.5") (parse-double "-.5e-3") (parse-double "42") (parse-double "1e400")]
;=> [1.5 1.0 0.5 100000.0 1.5 -5.0E-4 42.0 ##Inf]
---
[(parse-double "NaN") (parse-double "Infinity") (parse-double "-Infinity") (parse-double "+Infinity")]
;=> [##NaN ##Inf ##-Inf ##Inf]
---
[(parse-double " 1.5") (parse-double "1.5 ") (parse-double "1.5d") (parse-double "0x1p3") (parse-double "1,5") (parse-double "1e") (parse-double ".") (parse-double "") (parse-double "inf") (parse-double nil)]
;=> [1.5 1.5 1.5 8.0 nil nil nil nil nil nil]
---
(parse-double :x)
;;; "type_error: 1:1: parse-double: expected string, got keyword :x \\(arg 1\\)"
---
[(parse-double "0x1.8p1") (parse-double "-0X1P-2") (parse-double "0x10") (parse-double "0x1_0p0") (parse-double " 0x1p3d ") (parse-double "0x1fp0") (parse-double "0x.8p1") (parse-double "0xp1") (parse-double "+0x1p1") (parse-double "0x1p99999")]
;=> [3.0 -0.25 nil nil 8.0 31.0 1.0 nil 2.0 ##Inf]
---
[(parse-double "\t2\n") (parse-double " 1e3 ") (parse-double "1.5F") (parse-double "1.5 x") (parse-double " ") (parse-double "d") (parse-double "NaNd")]
;=> [2.0 1000.0 1.5 nil nil nil nil]
---
;; Java statics throw on bad input, so they are errors here
[(Integer/parseInt "42") (Integer/parseInt "+42") (Integer/parseInt "ff" 16) (Integer/parseInt "-101" 2) (Long/parseLong "-9") (Long/parseLong "9223372036854775807") (Long/valueOf "7")]
;=> [42 42 255 -5 -9 9223372036854775807 7]
---
(Integer/parseInt "3000000000")
;;; "value_error: 1:1: Integer/parseInt: cannot parse string \"3000000000\" as an integer\n(?s:.*)hint: use parse-long"
---
(Long/parseLong "12a")
;;; "value_error: 1:1: Long/parseLong: cannot parse string \"12a\" as an integer"
---
(Integer/parseInt "1" 99)
;;; "value_error: 1:1: Integer/parseInt: radix 99 out of range"
---
(Integer/parseInt nil)
;;; "type_error: 1:1: Integer/parseInt: expected string, got nil \\(arg 1\\)"
---
[(Double/parseDouble "1.5") (Double/parseDouble " 1.5 ") (Double/parseDouble "1.5d") (Double/parseDouble "2f") (Double/parseDouble "-Infinity")]
;=> [1.5 1.5 1.5 2.0 ##-Inf]
---
(Double/parseDouble "abc")
;;; "value_error: 1:1: Double/parseDouble: cannot parse string \"abc\" as a number"
---
;; a regex literal reads with string escapes (a documented difference from
;; Clojure): #"\d" and #"\\d" both mean a digit, #"\\\\" a backslash
[(re-find #"\d" "a1") (re-find #"\\d" "a1") (re-find #"\\\\" "a\\b") (re-find #"\u00e9" "caf\u00e9")]
;=> ["1" "1" "\\" "é"]
---
;; Java's \uXXXX escape in a pattern's text means its character
(re-find (re-pattern "[\\u0041-\\u0043]+") "xxABCyy")
;=> "ABC"
---
;; re-pattern and regex literals; a pattern may also be a string
[(regex? (re-pattern "\\d+")) (regex? #"x") (regex? "x") (re-find (re-pattern "\\d+") "ab12") (re-find "\\d+" "ab12")]
;=> [true true false "12" "12"]
---
(re-pattern "(?=x)")
;;; "regex_error: 1:1: invalid regex \"\\(\\?=x\\)\": lookaround is not supported"
---
(re-pattern "(a)\\1")
;;; "regex_error: 1:1: invalid regex .*backreferences are not supported"
---
(re-pattern "[a-")
;;; "regex_error: 1:1: invalid regex"
---
(re-pattern 5)
;;; "type_error: 1:1: re-pattern: expected a regex or pattern string, got 5 \\(arg 1\\)"
---
;; re-find: a string without groups, else [whole g1 ...]; an unmatched group is nil
[(re-find #"\d+" "ab12cd34") (re-find #"(\d+)-(\d+)?" "12-") (re-find #"x" "abc") (re-find #"(?i)ABC" "xabcx") (re-find #"\d" nil)]
;=> ["12" ["12-" "12" nil] nil "abc" nil]
---
(re-find #"\d" 12)
;;; "type_error: 1:1: re-find: expected string, got 12 \\(arg 2\\)"
---
;; re-matches: the whole string (also when leftmost-first would stop early)
[(re-matches #"\d+" "123") (re-matches #"\d+" "12a") (re-matches #"a|ab" "ab") (re-matches #"(\w+)@(\w+)" "me@host") (re-matches #"x" nil)]
;=> ["123" nil "ab" ["me@host" "me" "host"] nil]
---
;; re-seq → vector (nil when nothing matches, as Clojure)
[(re-seq #"\d" "a1b2c3") (re-seq #"\d" "abc") (re-seq #"(\d)(x)?" "1x2") (re-seq #"\w+" nil) (count (re-seq #"o" "foo boo")) (if (re-seq #"x" "abc") :yes :no)]
;=> [["1" "2" "3"] nil [["1x" "1" "x"] ["2" "2" nil]] nil 4 :no]
---
[(re-split #"\s*,\s*" "a , b,c") (re-split #"," "a,b,,") (re-split #"," "a,b,c" 2) (re-split #"," nil)]
;=> [["a" "b" "c"] ["a" "b"] ["a" "b,c"] []]
---
(re-quote-replacement "$1\\x")
;=> "\\$1\\\\x"
---
;; extract (pattern s [group=1]) and extract-int (pattern s [group [default]])
[(extract "ID:(\\d+)" "ID:42") (extract #"ID:(\d+)" "ID:42" 0) (extract #"(\w)=(\d)" "a=1" 2) (extract #"ID" "ID:42") (extract #"x(\d)" "abc") (extract #"(\d)" nil) (extract #"(\d)" "1" 5)]
;=> ["42" "ID:42" "1" nil nil nil nil]
---
[(extract-int "age=(\\d+)" "age=25") (extract-int #"age=(\d+)" "none") (extract-int #"age=(\d+)" "none" 1 0) (extract-int #"x=(\d+) y=(\d+)" "x=1 y=2" 2 0) (extract-int #"v=(\w+)" "v=abc" 1 -1)]
;=> [25 nil 0 2 -1]
---
(extract 5 "a")
;;; "type_error: 1:1: extract: expected a regex or pattern string, got 5 \\(arg 1\\)"
---
;; only the first 32 KB of input is scanned
(re-find #"needle" (str (apply str (repeat 40000 "a")) "needle"))
;=> nil
---
(count (re-seq #"a" (apply str (repeat 40000 "a"))))
;=> 32768
---
;; split with a regex keeps text past the scan cap in the last part
(count (str/split (str "x,y," (apply str (repeat 40000 "a"))) #",\s*"))
;=> 3
---
;; host data: parse numbers out of string fields
;; @ctx {"lines": ["total: 12 items", "total: 30 items", "n/a"]}
(->> ctx/lines (keep #(extract-int #"total: (\d+)" %)) (reduce +))
;=> 42
---
;; re-matches cannot judge a whole string past the scan cap
(re-matches #"a+" (str (apply str (repeat 40000 "a")) "b"))
;;; "value_error: 2:1: re-matches: input of 40001 bytes exceeds the 32768-byte regex scan limit"
---
[(parse-boolean "true") (parse-boolean "false") (parse-boolean "True") (parse-boolean "") (parse-boolean " true") (parse-boolean nil)]
;=> [true false nil nil nil nil]
---
[(Boolean/parseBoolean "true") (Boolean/parseBoolean "TRUE") (Boolean/parseBoolean "tRuE") (Boolean/parseBoolean "yes") (Boolean/parseBoolean "") (Boolean/parseBoolean nil)]
;=> [true true true false false false]
---
(Boolean/parseBoolean 1)
;;; "type_error: 1:1: Boolean/parseBoolean: expected string"
