"""Abbreviations whose final period does not end a sentence, per language (generated; do not edit by hand).

The tokenizer exceptions of spaCy 3.8 (MIT licence, `spacy.blank(lang).tokenizer.rules`) that end in a
period which spaCy's suffix rules would otherwise split off (a lowercase letter, digit or symbol before
it, or two capitals): with them, `curate.dedup.units` splits sentences where spaCy's sentencizer does.
"""

_WORDS = {
    "en": """
        10a.m. 10p.m. 11a.m. 11p.m. 12a.m. 12p.m. 1a.m. 1p.m. 2a.m. 2p.m. 3a.m. 3p.m. 4a.m. 4p.m. 5a.m. 5p.m. 6a.m.
        6p.m. 7a.m. 7p.m. 8a.m. 8p.m. 9a.m. 9p.m. Adm. Ak. Ala. Apr. Ariz. Ark. Aug. Bros. Calif. Co. Colo. Conn.
        Corp. Dec. Del. Dr. E.g. Feb. Fla. Ga. Gen. Gov. I.e. Ia. Id. Ill. Inc. Ind. Jan. Jr. Jul. Jun. Kan. Kans.
        Ky. La. Ltd. Mar. Mass. Md. Messrs. Mich. Minn. Miss. Mo. Mont. Mr. Mrs. Ms. Mt. Neb. Nebr. Nev. Nov. Oct.
        Okla. Ore. Pa. Prof. Rep. Rev. Sen. Sep. Sept. St. Tenn. Va. Wash. Wis. a. a.m. b. c. co. d. e. e.g. f. g.
        h. i. i.e. j. k. l. m. n. o. p. p.m. q. r. s. t. u. v. v.s. vs. w. x. y. z. °c. °f. °k. ä. ö. ü.
    """,
    "pt": """
        Adm. Art. Av. Cia. Dr. E.g. Fund. Gen. Gov. I.e. Inc. Jr. Ltd. Mr. Rep. Rev. Sen. Sr. Sra. a. art. av. b.
        c. d. dom. dr. e. e.g. ed. eng. etc. f. g. h. i. i.e. j. k. l. m. n. o. p. p.m. pag. pág. q. r. s. sr. sra.
        t. tel. u. v. vs. w. x. y. z. °c. °f. °k. ä. ö. ü.
    """,
    "de": """
        Abb. Abk. Abs. Abt. Apr. Aug. B.Sc. Bd. Betr. Bf. Bhf. Biol. Bsp. Chr. Cie. Co. Dez. Di. Dipl. Dipl.-Ing.
        Do. Dr. Fa. Fam. Feb. Fr. Frl. Gebr. Hbf. Hg. Hr. Hrn. Hrsg. II. III. IV. Inc. Ing. Jan. Jh. Jhd. Jr. Jul.
        Jun. M.Sc. Mi. Mio. Mo. Mr. Mrd. Mrz. MwSt. Mär. Nov. Nr. Okt. Orig. Pkt. Prof. Red. Sa. Sep. Sept. So. St.
        Std. Str. Tel. Tsd. Univ. Vol. a. abzgl. adv. al. allg. b. betr. biol. bspw. bzgl. bzw. c. ca. co. d. d.h.
        dgl. e. e.g. ebd. ehem. eigtl. engl. entspr. erm. etc. ev. evtl. f. frz. g. geb. gegr. gem. ggf. ggfs. ggü.
        h. h.c. hrsg. i. i.Tr. i.e. incl. inkl. insb. j. jr. jun. jur. k. kath. l. lat. lt. m. max. min. mind. mtl.
        n. n.Chr. nat. o. o.a. o.g. o.k. o.ä. orig. p. p.a. p.s. pers. phil. q. q.e.d. r. rer. röm. s. s.o. sen.
        sog. std. stellv. t. tägl. u. u.a. u.s.w. u.v.m. usf. usw. uvm. v. v.Chr. v.a. v.l.n.r. vgl. vllt. vlt. vs.
        w. wiss. x. y. z. z.Bsp. z.Zt. z.b. zzgl. °c. °f. °k. ä. ö. österr. ü.
    """,
    "es": """
        10a.m. 10p.m. 11a.m. 11p.m. 12a.m. 12m. 12p.m. 1a.m. 1p.m. 2a.m. 2p.m. 3a.m. 3p.m. 4a.m. 4p.m. 5a.m. 5p.m.
        6a.m. 6p.m. 7a.m. 7p.m. 8a.m. 8p.m. 9a.m. 9p.m. Av. Avda. Cía. Dr. Dra. EE.UU. Ee.Uu. Gob. Gral. Ing. Lic.
        Prof. Profa. Sr. Sra. Srta. Ud. Uds. Vd. Vds. a. apdo. aprox. b. c. d. dna. dpto. e. ej. esq. etc. f. fig.
        g. h. i. j. k. l. m. m.n. n. núm. o. p. p.ej. pág. q. q.e.p.d. r. s. s.s.s. t. u. v. vol. w. x. y. z. °c.
        °f. °k. ä. ö. ü.
    """,
    "fr": """
        Dr. MM. Mlle. Mme. Mr. No. St. Ste. Vol. a. apr. av. avr. b. c. cf. d. déc. e. etc. f. févr. g. h. i. j.
        janv. juill. k. l. m. n. nov. o. oct. p. pp. q. r. s. sept. t. u. v. w. x. y. z. °c. °f. °k. ä. ö. ü.
    """,
    "it": """
        .. .... Art. Avv. Civ. Cod. Cost. Jr. L'art. L’art. Proc. St. a. al. all'art. all’art. art. artt. att. avv.
        b. c. c.d. cm. col. d. dall'art. dall’art. dell'art. dell’art. distr. e. ecc. etc. f. g. h. i. j. k. l'art.
        l. l’art. m. n. nell'art. nell’art. o. p. pag. prof. q. r. s. s.p.a. sett. sett.. ss. t. tel. u. v. w. x.
        y. z. °c. °f. °k. ä. ö. ü.
    """,
}

ABBREVIATIONS: dict[str, frozenset[str]] = {lang: frozenset(words.split()) for lang, words in _WORDS.items()}
