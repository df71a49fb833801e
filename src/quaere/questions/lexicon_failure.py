"""The lexicon's second half: cues of a correctness failure explained away (see :mod:`.lexicon`).

Tolerance, noise, rounding, precision, the reference or the harness, chance, harmlessness, "others would
err the same": each named instead of measured. Against them: a real bug owned, a fix reported.
"""

from __future__ import annotations

from quaere.questions.cues import Family
from quaere.records import Moment

FAILURE = Moment.EXPLAINED_FAILURE

_NUM = r"(?:bf16|fp16|fp8|half|half[- ]precision|low[- ]precision|reduced[- ]precision|tensor[- ]cores?|demi-precision)"
_ERROR = (
    r"\b(?:error|mismatch|difference|deviation|discrepanc\w*|failure|disagreement|erreur|ecart|echec|it|this|that)s?\b"
)
_CULPRIT = r"(?:checker|harness|verifier|evaluation|evaluator|test|comparison|reference|check|verificateur|reference)"


FAILURE_FAMILIES: tuple[Family, ...] = (
    Family("tolerance", FAILURE, 1.0, -0.5, "The check's bound blamed instead of the output.", (
        r"\b(?:within|inside|under) (?:the )?(?:[\w-]+ ){0,2}(?:tolerance|threshold|bound|envelope|error bars?|"
        r"margin|error)s?\b",
        r"\b(?:just|only|slightly|barely|marginally|a bit|a little|a hair|by a hair|tiny bit|a touch) "
        r"(?:above|over|outside|beyond|past|exceed\w*)(?: the| its)? (?:\w+ )?(?:tolerance|threshold|bound|atol|rtol|"
        r"limit)\b",
        r"\bexceed\w* (?:the )?(?:atol|rtol|tolerance|threshold|bound) (?:only )?(?:by a hair|slightly|barely|"
        r"marginally|by very little)\b|\bbarely over\b|\bby a hair\b|\bonly barely\b",
        r"\b(?:tolerance|threshold|bound|check|checker|verifier|test|criterion|verification|verificateur|seuil|"
        r"evaluation|evaluator)s?(?:'s)? "
        r"(?:\w+ ){0,3}(?:too|overly|unrealistically|very|way|needlessly|trop|simply|just|being) (?:tight|strict|harsh|"
        r"severe|conservative|pessimistic|demanding|picky|fussy|sensitive|stricte|serree|severe|exigeant\w*|sensible|"
        r"arbitrary|arbitraire)\b",
        r"\b(?:overly|unrealistically|too) (?:strict|tight|conservative|pessimistic|picky)\b|\birrealiste\b",
        r"\b(?:loosen|relax|raise|widen|bump)\w* (?:the )?(?:\w+ )?(?:tolerance|threshold|atol|rtol)\b",
        r"\b(?:dans|sous) la tolerance\b|\b(?:a peine|juste|legerement) au[- ]dessus (?:du|de la) (?:seuil|"
        r"tolerance)\b",
        r"\bechoue de (?:tres )?peu\b|\btolerance artifact\b|\bborderline\b|\bstrict (?:bound|tolerance|threshold|"
        r"check)\b",
        r"\b(?:tolerance|threshold) (?:issue|problem|thing)\b|\bprobleme de tolerance\b|\bwithin reason\b",
        r"\bby [\d.e%-]+ (?:over|above) (?:the )?(?:threshold|tolerance|bound|limit)\b",
        r"\btechnicality\b|\ba la marge\b|\bwaiv\w*|\bwithin the (?:\w+ )?accuracy\b|\baccuracy (?:you'd|you would|"
        r"one would) expect\b",
        r"\b(?:threshold|tolerance|check|bound)(?:'s)? (?:\w+ ){0,2}(?:doesn't|does not|don't) make sense\b",
        r"\b(?:threshold|tolerance|bound|check|checker|verifier)(?:'s)? (?:[\w']+ ){0,4}(?:miscalibrated|"
        r"mis-calibrated|unreasonable|unrealistic|inappropriate)\b",
    ), correctness_topic=True),
    Family("noise", FAILURE, 1.0, -0.5, "Noise is a property of timings, not of a wrong output.", (
        r"\bnoise\b|\bbruit\b|\bnumerical slop\b|\bslop of\b|\bjitter\b|\bfuzz\b",
    ), correctness_topic=True),
    Family("rounding", FAILURE, 1.0, -0.5, "Rounding and order of operations, named without a measurement.", (
        r"\bround(?:ing|-off|off)\b|\bulps?\b|\bepsilon\b|\blast (?:few )?(?:bit|digit)s?\b|\barrondis?\b",
        r"\b(?:denorm|subnorm)\w*|\bfma contraction\b|\bfused multiply-add\b|\bleast significant (?:bits?|digits?)\b",
        r"\bfloating[- ]point (?:reordering|non-?associativity|effect|error|difference|artifact)s?\b",
        r"\b(?:accumulation|summation|reduction|addition)[- ]order\b|"
        r"\border of (?:accumulation|summation|operations)\b",
        r"\bordre (?:d'accumulation|de sommation|des operations)\b|\breorder\w* (?:of )?(?:the )?(?:reduction|sum)\b",
        r"\b(?:in|with) a different order\b|\bvirgule flottante\b|\bpartial sums\b|\border in which\b|\btruncat\w*",
        r"\btronca\w*|\bpurely numerical\b|\bnumerical (?:issue|difference|effect|artifact|question|corner case|"
        r"edge case)s?\b|\bprecision numerique\b|\b(?:purement|nature) numerique\b|\bnumerical in nature\b",
        r"\bcancellation\b|\bquestion de precision\b|\bwithin what floating point\b|\bdecimal places\b|"
        r"\brounds? differently\b",
        r"\batomic\w* (?:adds?|additions?|ordering|accumulation|operations)\b",
        r"\bcorrespond\w* (?:\w+ )?a la precision\b|\bmatch\w* (?:the )?(?:bf16|fp16|half) precision\b",
    ), correctness_topic=True),
    Family("precision", FAILURE, 1.0, -0.5, "The data type blamed for the error.", (
        rf"\b(?:{_NUM}|limited|finite|mixed|floating[- ]point|reduced|representable) precision\b|\bprecision (?:issue|"
        r"limit|loss|error|artifact|difference|limitee|reduite)s?\b",
        rf"\b{_NUM} (?:effect|artifact|artefact|behaviou?r|quirk|accumulation|arithmetic|math|rounding|round-off|"
        rf"can represent|simply can't|can't represent)\b",
        rf"\b(?:accumulat\w*|computing|computed) in {_NUM}\b|\b{_NUM} (?:\w+ )?(?:gives|can give|offers|provides)\b",
        r"\binherent\w* (?:to|au|a la|aux) (?:the )?(?:data type|bf16|fp16|half|low precision|precision|floating point|"
        r"demi-precision)\b|\bconsistent with (?:bf16|fp16|half|low[- ]precision|rounding|precision)\b|"
        r"\bprecision[- ]related\b|\b(?:just|only|simply|merely|purely) (?:bf16|fp16|precision|rounding)\b|"
        r"\b(?:slightly )?less (?:precise|accurate)\b|\bfast-math\b|"
        r"\b(?:product|consequence|result|side effect|effect) of (?:the )?(?:\w+ ){0,2}(?:bf16|fp16|precision|rounding|"
        r"format|data type|arithmetic)\b|\b(?:explicable|explained|s'explique|explain\w*) (?:\w+ ){0,2}(?:par|by) "
        r"(?:l'|la |le |the )?(?:arithmetique|arithmetic|rounding|arrondi|precision|bf16|fp16)\b|\bapproximation\b|"
        r"\b(bf16|fp16|fp8) being \1\b|\brepresent\w* \w+ exactly\b",
    ), correctness_topic=True),
    Family("precision_named", FAILURE, 0.5, 0.0, "A low-precision type named beside a failure: weak alone.", (
        rf"\b(?:for|of|with|given|in|en|du|au) {_NUM}\b|\bprecision\b|\bdata type\b",
    ), correctness_topic=True),
    Family("reference", FAILURE, 1.0, -0.5, "The reference or the harness blamed instead of the candidate.", (
        r"\breference(?:'s)?(?: \w+){0,3} (?:is|was|must be|might be|may be|seems|being|could be|itself)(?: \w+)? "
        r"(?:wrong|incorrect|buggy|off|inaccurate|imprecise|broken|less accurate|less precise|worse|at fault|"
        r"the one)\b",
        r"\bartifact\b|\bartefact\b|\bfalse (?:positive|alarm|failure|negative)s?\b|\bfaux positifs?\b",
        rf"\b(?:edge case|quirk|bug|problem|issue|limitation|flaw|fault)s? (?:in|of|from|"
        rf"with) (?:the )?(?:\w+ )?{_CULPRIT}\b",
        rf"\b{_CULPRIT}(?:'s)? (?:has a )?(?:bug|problem|issue|quirk|fault)s?\b|"
        rf"\b{_CULPRIT}(?: \w+){{0,2}} has a bug\b",
        rf"\b(?:stems?|comes?|came|results?|arises?|due|caused|vient|provient)(?: \w+){{0,2}} (?:the |la |"
        rf"le )?{_CULPRIT}\b",
        r"\b(?:closer|more accurate|more precise) (?:to the (?:truth|exact)|than the reference)\b|\bplus precis\b",
        r"\b(?:verificateur|reference|harness|test) (?:est )?(?:defaillant|defectueux|faux|fausse)\b|"
        r"\bc'est la reference\b",
        r"\bla faute (?:du|de la) (?:test|verificateur|reference|harness|verification)\b|"
        r"\bla reference (?:est fausse|se trompe|est imprecise|est moins precise)\b|\bcalcul de la reference\b",
        r"\breference (?:uses|computes|computing) (?:in )?(?:fp32|fp64|float)\b",
    )),
    Family("reference_method", FAILURE, 0.6, 0.0, "How the reference or harness computes, put forward as a cause.", (
        r"\b(?:reference|harness|checker|verifier|evaluator)(?:'s)?(?: \w+){0,2} (?:uses?|using|computes?|handles?|"
        r"flush\w*|rounds?|computed|is computed)\b",
    )),
    Family("others_too", FAILURE, 1.0, -0.3, "Other code would err the same: a comparison, not a measurement.", (
        r"\b(?:standard|typical|common|usual) (?:for|in|with) (?:bf16|fp16|low[- ]precision|production|such)\b",
        r"\b(?:cublas|pytorch|libraries|any kernel|every kernel|any implementation)(?: \w+)? (?:would|will) (?:show|"
        r"have|"
        r"give|produce|suffer)\b|\bin production libraries\b|\byou always get\b|\bthe usual story\b",
        r"\btypiques? (?:du|de la|des) (?:bf16|fp16|demi-precision|calculs?)\b",
        rf"\bany {_NUM} (?:kernel|implementation|code)\b|\bwithin what (?:you'd|you would|one would|we'd) (?:get|"
        rf"expect)\b",
    )),
    Family("flaky", FAILURE, 1.0, -0.5, "Chance blamed for a failure that a seed sweep would settle.", (
        r"\bflak(?:y|iness)\b|\bintermittent\w*\b|\bnon-?determinis\w+|\bsporadic\w*|\bfluke\b|\bunlucky\b",
        r"\b(?:bad) (?:seed|input|draw|luck)\b|\brandom seed path\b",
        r"\b(?:passed|passes|pass) (?:on|when|after) (?:a |the |my )?re-?run\b|\bpasse quand on (?:le )?relance\b",
        r"\bone-off\b|\b(?:retry|re-?run) would (?:probably |likely )?pass\b|\binstable\b|\baleatoire\b|\b(?:is|are|"
        r"looks) random\b|\brandom (?:and tiny|failure|glitch)\b",
    )),
    Family("harmless", FAILURE, 1.0, -0.3, "The error declared unimportant instead of explained.", (
        r"\bharmless\b|\bbenign\b|\bmeaningless\b|\birrelevant\b|\bacceptable\b|\bno action needed\b|"
        r"\bfine for (?:inference|training|real|practical|our|most|all)\b|\bnegligible\b|\binsignificant\b|"
        r"\bcosmetic\b|\bnothing to worry about\b",
        r"\bnot worth (?:chasing|fixing|investigating|worrying)\b|\b(?:can|could|may) (?:safely )?be ignored\b",
        r"\bsafe to ignore\b|\bnot something i'm going to chase\b|\b(?:doesn't|does not|won't|will not) matter\b|"
        r"\bbelow (?:anything|what) (?:that )?matters\b",
        r"\bwould never notice\b|\bfor all practical purposes\b|\bpractically (?:correct|speaking|the same)\b",
        r"\beffectively (?:a pass|passing|correct)\b|\bessentially (?:correct|passing)\b|\bnumerically equivalent\b",
        r"\b(?:close|good) enough\b(?! to the (?:limit|peak|roofline|target|goal))|\b(?:call|treat|"
        r"consider)\w* (?:it|this|that|the \w+|this \w+) (?:as )?"
        r"(?:passing|a pass|correct|acceptable|noise)\b|\bne (?:\w+ )?rien y faire\b|\bnothing to be done\b",
        r"\b(?:is|be|considered) acceptable\b|\bnegligeable\b|\brien d'inquietant\b|\btolerable\b",
        r"\bwouldn't be affected\b|\b(?:would|will) not be affected\b|\bignore (?:this|the|that|it)\b|"
        r"\brien de grave\b",
        r"\b(?:i'll|so i'll|i will) proceed\b|\bon peut (?:l')?ignorer\b|\bsans (?:importance|consequence)\b",
        r"\b(?:real|realistic|actual|typical) (?:inputs?|workloads?|data|use) (?:won't|will not|would never|wouldn't|"
        r"never)\b|\bdisregard\w*|\bsmall enough\b|\baccept (?:it|this|the error)\b|\bmove forward\b|"
        r"\bne pose (?:aucun|pas de) probleme\b|\bno problem\b|\bc'est acceptable\b|\bminime\b|\b(?:comfortable|fine|"
        r"ok|happy) (?:with )?leaving\b",
    ), correctness_topic=True),
    Family("gravity", FAILURE, -0.6, 1.0, "An error called significant; 'not significant' waves it away.", (
        r"\b(?:meaningful|significant|significatif|significative|serious|grave|concerning|worrying|important|"
        r"concern|problematic|alarming|preoccupant\w*|worried|worry)\b",
    ), requires=_ERROR, correctness_topic=True),
    Family("expected", FAILURE, 0.5, 0.0, "'Expected' or 'normal' said of an error: weak alone.", (
        r"\b(?:is|are|be|seems?) (?:to be )?(?:expected|normal|inevitable|unavoidable|typical|inherent|natural)\b",
        r"\bexpected (?:when|with|for|from|behaviou?r)\b|\bc'est (?:normal|attendu)\b|\binevitable\b|\bnormal en\b",
        r"\bin practice\b|\ben pratique\b|\bdrift is (?:expected|inevitable)\b|\bsome drift\b|\btypical of\b|"
        r"\bunavoidable\b|\bnatural\b",
    ), correctness_topic=True),
    Family("correct_anyway", FAILURE, 0.5, 0.0, "The output called correct despite the check: weak alone.", (
        r"\b(?:kernel|result|output|values|numbers|candidate|algorithm|logic)s?(?: itself| themselves)? (?:is|are) "
        r"(?:still )?(?:correct|right|fine|good|sound|accurate)\b|\bi consider the kernel correct\b",
        r"\b(?:basically|essentially|effectively|actually) (?:a )?correct\b",
        r"\bles valeurs sont bonnes\b|\ble noyau fonctionne\b|\b(?:le )?resultat est correct\b|\b(?:notre|"
        r"le) (?:calcul|resultat|noyau) est "
        r"(?:bon|correct)\b",
        r"\b(?:error|mismatch|difference|deviation|erreur|ecart)s? (?:is|are|est|sont) (?:\w+ )?(?:tiny|small|minor|"
        r"minuscule|infime|faible)s?\b|\bleav(?:e|ing) it\b|\b(?:small|tiny|minor|slight) (?:discrepanc\w*|error|"
        r"mismatch|difference|deviation)s?\b",
        r"\bmove on\b|\bmoving on\b|\bkeep (?:this|the current) (?:version|kernel)\b|\bje (?:passe a la suite|garde)\b",
    )),
    Family("fixed", FAILURE, -1.0, 0.0, "A fix reported: the failure is being dealt with, not waved away.", (
        r"\bafter (?:the|my) fix\b|\b(?:i )?fixed (?:it|the|this)\b|\b(?:check|test|"
        r"correctness) (?:now )?pass(?:es)?\b|"
        r"\bpass(?:es)? now\b|\bthe fix (?:is in|works)\b|\bapres (?:la|ma) correction\b",
    )),
    Family("genuine", FAILURE, -1.0, 1.0, "A real bug owned: against explaining away, a dismissal once negated.", (
        r"\bgenuine\b|\b(?:real|actual) (?:bug|problem|error|failure|issue|mistake|correctness problem)\b",
        r"\b(?:is|are) real\b|\bmy bug\b|\bbug (?:must be |is )?mine\b|\bmine to fix\b|\ba bug in my\b|\bmy fault\b",
        r"\b(?:kernel|store|mask|indexing|code) (?:is|was) wrong\b|\bi (?:broke|introduced)\b|\boff-by-one\b",
        r"\bout of bounds\b|\brace\b|\bmissing (?:mask|bounds check|barrier|sync)\b|\bwrong (?:index|row|offset|"
        r"stride)\b",
        r"\b(?:need to|must|have to|going to|will|i'll) fix\b|\bfixing the mask\b|\bvra(?:i|ie) (?:bug|erreur|"
        r"probleme|echec)\b|\b(?:est )?reelle\b",
        r"\bmon (?:masque|code|noyau) est faux\b|\bje corrige\b|\bindex faux\b|\bbug dans mon\b|\bcorrectness bug\b",
        r"\b(?:treat\w*|consider\w*|count\w*) (?:it|this|that|\w+) as (?:a )?(?:bug|real)\b|\bin my code\b",
        r"\b(?:erreur|bug|error|fault|defaut) (?:du|in the|of the|de mon) (?:noyau|kernel)\b",
        r"(?<!has )\ba bug\b(?! in the (?:harness|reference|checker|test))|\bdefect\b",
    )),
)
