"""Abbreviations whose final period does not end a sentence, per language (generated; do not edit by hand).

The tokenizer exceptions of spaCy 3.8 (MIT licence, `spacy.blank(lang).tokenizer.rules`) that end in a
period: spaCy keeps them whole, so with them `curate.dedup.units` splits sentences where spaCy's
sentencizer does. Keyed by base language code (`curate.lang.language`); a language not listed has none.
"""

_WORDS = {
    "en": """
        10a.m. 10p.m. 11a.m. 11p.m. 12a.m. 12p.m. 1a.m. 1p.m. 2a.m. 2p.m. 3a.m. 3p.m. 4a.m. 4p.m. 5a.m. 5p.m. 6a.m.
        6p.m. 7a.m. 7p.m. 8a.m. 8p.m. 9a.m. 9p.m. Adm. Ak. Ala. Apr. Ariz. Ark. Aug. Bros. Calif. Co. Colo. Conn.
        Corp. D.C. Dec. Del. Dr. E.G. E.g. Feb. Fla. Ga. Gen. Gov. I.E. I.e. Ia. Id. Ill. Inc. Ind. Jan. Jr. Jul.
        Jun. Kan. Kans. Ky. La. Ltd. Mar. Mass. Md. Messrs. Mich. Minn. Miss. Mo. Mont. Mr. Mrs. Ms. Mt. N.C. N.D.
        N.H. N.J. N.M. N.Y. Neb. Nebr. Nev. Nov. Oct. Okla. Ore. Pa. Ph.D. Prof. Rep. Rev. S.C. Sen. Sep. Sept. St.
        Tenn. Va. Wash. Wis. a. a.m. b. c. co. d. e. e.g. f. g. h. i. i.e. j. k. l. m. n. o. p. p.m. q. r. s. t. u.
        v. v.s. vs. w. x. y. z. °C. °F. °K. °c. °f. °k. ä. ö. ü.
    """,
    "pt": """
        Adm. Art. Av. Cia. Dr. E.G. E.g. Fund. Gen. Gov. I.E. I.e. Inc. Jr. Ltd. Mr. Ph.D. Rep. Rev. Sen. Sr. Sra.
        a. art. av. b. c. d. dom. dr. e. e.g. ed. eng. etc. f. g. h. i. i.e. j. k. l. m. n. o. p. p.m. pag. pág. q.
        r. s. sr. sra. t. tel. u. v. vs. w. x. y. z. °C. °F. °K. °c. °f. °k. ä. ö. ü.
    """,
    "de": """
        A.C. A.D. A.G. Abb. Abk. Abs. Abt. Apr. Aug. B.A. B.Sc. Bd. Betr. Bf. Bhf. Biol. Bsp. Chr. Cie. Co. D.C.
        Dez. Di. Dipl. Dipl.-Ing. Do. Dr. Fa. Fam. Feb. Fr. Frl. G.m.b.H. Gebr. Hbf. Hg. Hr. Hrn. Hrsg. I. II. III.
        IV. Inc. Ing. Jan. Jh. Jhd. Jr. Jul. Jun. K.O. L.A. M.A. M.Sc. Mi. Mio. Mo. Mr. Mrd. Mrz. MwSt. Mär. N.Y.
        N.Y.C. Nov. Nr. O.K. Okt. Orig. P.S. Pkt. Prof. R.I.P. Red. Sa. Sep. Sept. So. St. Std. Str. Tel. Tsd. U.S.
        U.S.A. U.S.S. Univ. Vol. a. a.D. a.M. a.Z. abzgl. adv. al. allg. b. betr. biol. bspw. bzgl. bzw. c. ca. co.
        d. d.h. dgl. e. e.V. e.g. ebd. ehem. eigtl. engl. entspr. erm. etc. ev. evtl. f. frz. g. geb. gegr. gem.
        ggf. ggfs. ggü. h. h.c. hrsg. i. i.A. i.G. i.O. i.Tr. i.V. i.d.R. i.e. incl. inkl. insb. j. jr. jun. jur.
        k. kath. l. lat. lt. m. m.E. m.M. max. min. mind. mtl. n. n.Chr. nat. o. o.a. o.g. o.k. o.ä. orig. p. p.a.
        p.s. pers. phil. q. q.e.d. r. rer. röm. s. s.o. sen. sog. std. stellv. t. tägl. u. u.U. u.a. u.s.w. u.v.m.
        usf. usw. uvm. v. v.Chr. v.a. v.l.n.r. vgl. vllt. vlt. vs. w. wiss. x. y. z. z.B. z.Bsp. z.T. z.Z. z.Zt.
        z.b. zzgl. °C. °F. °K. °c. °f. °k. ä. ö. österr. ü.
    """,
    "es": """
        10a.m. 10p.m. 11a.m. 11p.m. 12a.m. 12m. 12p.m. 1a.m. 1p.m. 2a.m. 2p.m. 3a.m. 3p.m. 4a.m. 4p.m. 5a.m. 5p.m.
        6a.m. 6p.m. 7a.m. 7p.m. 8a.m. 8p.m. 9a.m. 9p.m. Av. Avda. Cía. Dr. Dra. EE.UU. Ee.Uu. Gob. Gral. Ing. J.C.
        Lic. P.D. Prof. Profa. Q.E.P.D. S.A. S.L. S.R.L. Sr. Sra. Srta. Ud. Uds. Vd. Vds. a. a.C. a.J.C. apdo.
        aprox. b. c. d. d.C. d.J.C. dna. dpto. e. ej. esq. etc. f. fig. g. h. i. j. k. l. m. m.n. n. núm. o. p.
        p.ej. pág. q. q.e.p.d. r. s. s.s.s. t. u. v. vol. w. x. y. z. °C. °F. °K. °c. °f. °k. ä. ö. ü.
    """,
    "fr": """
        Dr. J.-C. M. MM. Mlle. Mme. Mr. No. St. Ste. Vol. a. apr. av. avr. b. c. cf. d. déc. e. etc. f. févr. g. h.
        i. j. janv. juill. k. l. m. n. nov. o. oct. p. pp. q. r. s. sept. t. u. v. w. x. y. z. °C. °F. °K. °c. °f.
        °k. ä. ö. ü.
    """,
    "it": """
        Art. Avv. Civ. Cod. Cost. Jr. L'art. L’art. Proc. St. a. a.C. al. all'art. all’art. art. artt. att. avv. b.
        c. c.d. cm. col. d. d.C. dall'art. dall’art. dell'art. dell’art. distr. e. ecc. etc. f. g. h. i. j. k.
        l'art. l. l’art. m. n. nell'art. nell’art. o. p. pag. prof. q. r. s. s.p.a. sett. sett.. ss. t. tel. u. v.
        w. x. y. z. °C. °F. °K. °c. °f. °k. ä. ö. ü.
    """,
}

ABBREVIATIONS: dict[str, frozenset[str]] = {lang: frozenset(words.split()) for lang, words in _WORDS.items()}
