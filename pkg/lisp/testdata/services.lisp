;; builtins_services.go: the host services. Their functions come from the
;; agent running the program (Options.Host); here no host gives them.
(llm-query {:prompt "Label this" :signature "{label :string}" :input {:text "hi"}})
;;; "unknown_tool: 3:1: llm-query is not available: the agent running this program does not enable it"
---
(emit {:progress 1})
;;; "unknown_tool: 1:1: emit is not available: the agent running this program does not enable it"
---
(step-done "1" "fetched the orders")
;;; "unknown_tool: 1:1: step-done is not available: the agent running this program does not enable it"
