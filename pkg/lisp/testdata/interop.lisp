;; builtins_interop.go. A date is its ISO-8601 text (UTC).
[(java.util.Date. 1700000000000) (java.util.Date. 1700000000) (java.util.Date. "2024-01-31") (java.util.Date. "2024-01-31T10:00:00+02:00") (java.util.Date. "Wed, 8 Jan 2026 14:30:00 +0000")]
;=> ["2023-11-14T22:13:20.000Z" "2023-11-14T22:13:20.000Z" "2024-01-31T00:00:00.000Z" "2024-01-31T08:00:00.000Z" "2026-01-08T14:30:00.000Z"]
---
[(.getTime (java.util.Date. 1700000000000)) (.getTime (java.util.Date. "1970-01-01T00:00:01Z")) (.getTime "2024-01-31") (.getTime 5)]
;=> [1700000000000 1000 1706659200000 5]
---
;; (java.util.Date.) is now
(let [d (java.util.Date.) t (.getTime d)] [(string? d) (> t 1700000000000) (<= (- (System/currentTimeMillis) t) 60000)])
;=> [true true true]
---
(java.util.Date. "yesterday")
;;; "value_error: 1:1: java.util.Date.: cannot parse string \"yesterday\""
---
(java.util.Date. :x)
;;; "type_error: 1:1: java.util.Date.: expected a timestamp or date string, got keyword :x \\(arg 1\\)"
---
(.getTime nil)
;;; "type_error: 1:1: .getTime: expected a date, got nil \\(arg 1\\)"
---
(.getTime "soon")
;;; "value_error: 1:1: .getTime: cannot read string \"soon\" as a date"
---
[(LocalDate/parse "2024-01-31") (java.time.LocalDate/parse "2024-02-29")]
;=> ["2024-01-31" "2024-02-29"]
---
;; a date-time is not a date (Clojure: DateTimeParseException)
(LocalDate/parse "2024-01-31T10:00:00Z")
;;; "value_error: 2:1: LocalDate/parse: string \"2024-01-31T10:00:00Z\" is a date-time, not a date(.|\n)*hint: take its date part"
---
(LocalDate/parse "2024-13-01")
;;; "value_error: 1:1: LocalDate/parse: invalid ISO-8601 date string \"2024-13-01\" \\(expected YYYY-MM-DD\\)"
---
(LocalDate/parse 20240131)
;;; "type_error: 1:1: LocalDate/parse: expected string, got 20240131 \\(arg 1\\)"
---
[(.isBefore (LocalDate/parse "2024-01-31") (LocalDate/parse "2024-02-01")) (.isAfter "2024-01-31" "2024-02-01") (.isAfter (java.util.Date. 2000000000000) (java.util.Date. 1700000000000))]
;=> [true false true]
---
;; days between two dates
(/ (- (.getTime "2024-03-01") (.getTime "2024-02-01")) 86400000)
;=> 29
---
(Date. 0)
;=> "1970-01-01T00:00:00.000Z"
---
(integer? (System/currentTimeMillis))
;=> true
---
(System/currentTimeMillis 1)
;;; "arity_error: 1:1: System/currentTimeMillis expects 0 args, got 1"
---
;; .indexOf / .lastIndexOf give -1 when absent
[(.indexOf "abcb" "b") (.indexOf "abc" "z") (.indexOf "abc" "c" 1) (.lastIndexOf "abcb" "b") (.lastIndexOf "abc" "z") (.indexOf "héllo" "l")]
;=> [1 -1 2 3 -1 2]
---
(.indexOf nil "a")
;;; "type_error: 1:1: .indexOf: expected string, got nil \\(arg 1\\)"
---
[(.contains "abc" "b") (.startsWith "abc" "a") (.endsWith "abc" "c") (.toUpperCase "abc") (.toLowerCase "ABC") (.trim "  x ") (.length "héllo") (.substring "hello" 1 3) (.substring "hello" 2)]
;=> [true true true "ABC" "abc" "x" 5 "el" "llo"]
---
(.substring "abc" 2 5)
;;; "value_error: 1:1: .substring: range 2..5 out of bounds for a string of length 3"
---
;; host data: filter records by date
;; @ctx {"events": [{"at": "2024-01-05T10:00:00Z"}, {"at": "2024-02-05T10:00:00Z"}]}
(count (filter #(.isAfter (:at %) "2024-02-01") ctx/events))
;=> 1
---
;; .indexOf, .lastIndexOf and .contains also work on vectors (java.util.List)
[(.indexOf [1 2 3 2] 2) (.indexOf [:a] :b) (.lastIndexOf [1 2 3 2] 2) (.contains [1 2] 2.0) (.contains #{:a} :a) (.contains [1] 3)]
;=> [1 -1 3 true true false]
---
[(.toString 42) (.toString :a) (.equals "a" "a") (.equals 1 1.0) (.isEmpty "") (.isEmpty []) (.isEmpty "x") (.charAt "héllo" 1)]
;=> ["42" ":a" true true true true false "é"]
---
;; .isEmpty: a collection's emptiness, else a string's; nil and seqs are type errors
[(.isEmpty {}) (.isEmpty {:a 1}) (.isEmpty #{}) (.isEmpty #{1}) (.isEmpty [nil])]
;=> [true false true false false]
---
(.isEmpty (iterate inc 1))
;;; "type_error: 1:1: .isEmpty: expected string"
---
;; .split takes a regex, as Java's String.split; .replace is literal
[(.split "a.b,c" "[.,]") (.split "a,b,,," ",") (.split "a,b,c" "," 2) (.replace "a.b.c" "." "-")]
;=> [["a" "b" "c"] ["a" "b"] ["a" "b,c"] "a-b-c"]
---
(.charAt "abc" 3)
;;; "value_error: 1:1: .charAt: index 3 out of bounds for a string of length 3"
---
(.toString nil)
;;; "type_error: 1:1: .toString: expected a value, got nil \\(arg 1\\)"
---
;; LocalDate methods on yyyy-mm-dd text: day counts convert as Java's interop (a float truncates, NaN is 0)
(let [d (LocalDate/parse "2024-02-28")] [(.toEpochDay d) (.plusDays d 1) (.minusDays d 59) (.plusDays d 1.9) (.minusDays d ##NaN)])
;=> [19781 "2024-02-29" "2023-12-31" "2024-02-29" "2024-02-28"]
---
(.plusDays "2024-02-28T10:00:00Z" 1)
;;; "value_error: .*\\.plusDays: invalid ISO-8601 date"
---
(.minusDays "2024-02-28" "1")
;;; "type_error: .*\\.minusDays: expected number, got string \"1\" \\(arg 2\\)"
---
(.plusDays "2024-02-28" ##Inf)
;;; "value_error: .*\\.plusDays: day count out of range: ##Inf"
---
;; Boolean/valueOf, Long/toString (Integer/toString), .equalsIgnoreCase, Boolean/TRUE
[(Boolean/valueOf "True") (Boolean/valueOf nil) (Long/toString 255 16) (Integer/toString 9) (.equalsIgnoreCase "ÉA" "éa") Boolean/TRUE Boolean/FALSE]
;=> [true false "ff" "9" true true false]
---
(.equalsIgnoreCase "a" 1)
;;; "type_error: .*\\.equalsIgnoreCase: expected string, got 1 \\(arg 2\\)"
---
(Long/toString "1")
;;; "type_error: .*Long/toString: expected integer, got string \"1\" \\(arg 1\\)"
