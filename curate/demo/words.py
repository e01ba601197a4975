"""Word lists and sentence templates for the demo corpus (English and Portuguese).

Kept apart from `curate.demo.crawl` so the generator reads as logic, not data. Templates are short fixed
phrases between slots, so that two generated articles share few word 5-grams (distinct articles must
not look like near-duplicates to MinHash) while each article still reads as ordinary prose that
passes Gopher, C4 and FineWeb-style filters.
"""

from __future__ import annotations

FIRST = {
    "en": ("Alice", "Daniel", "Grace", "Samuel", "Olivia", "Marcus", "Hannah", "Victor", "Nora", "Peter", "Ruth",
           "Thomas", "Leah", "Oscar", "Irene", "Felix", "Clara", "Henry", "Maya", "Arthur", "Eleanor", "Joseph"),
    "pt": ("Ana", "João", "Beatriz", "Rafael", "Mariana", "Tiago", "Helena", "Lucas", "Inês", "Pedro", "Sofia",
           "Miguel", "Carolina", "André", "Luísa", "Gabriel", "Teresa", "Vicente", "Marta", "Rodrigo", "Joana"),
}
LAST = {
    "en": ("Walker", "Bennett", "Hughes", "Foster", "Palmer", "Reed", "Morgan", "Fletcher", "Barnes", "Shaw",
           "Holloway", "Carter", "Lambert", "Doyle", "Sutton", "Whitaker", "Marsh", "Porter", "Ellis", "Grant"),
    "pt": ("Almeida", "Ferreira", "Costa", "Rodrigues", "Martins", "Pereira", "Carvalho", "Gomes", "Ribeiro",
           "Lopes", "Moreira", "Teixeira", "Correia", "Mendes", "Nunes", "Barbosa", "Cardoso", "Pinto", "Rocha"),
}
PLACES = {
    "en": ("Millbrook", "Ashford", "Cedar Falls", "Kingsbridge", "Northwood", "Harlow", "Riverton", "Easton",
           "Fairhaven", "Oakridge", "Brampton", "Westfield", "Greenvale", "Stonehaven", "Lakeport", "Elmstead"),
    "pt": ("Vila Nova", "Santa Luzia", "Porto Alegre do Norte", "Serra Azul", "Campo Belo", "São Mateus",
           "Rio Claro", "Monte Verde", "Águas Claras", "Ponte Velha", "Barra Longa", "Lagoa Seca", "Belmonte"),
}
ORGS = {
    "en": ("the town council", "the regional water board", "a neighbourhood association", "the county library",
           "a local cooperative", "the state university", "a small charity", "the chamber of commerce",
           "the parks department", "a group of retired teachers", "the health clinic", "a family foundation"),
    "pt": ("a câmara municipal", "a associação de moradores", "a biblioteca municipal", "uma cooperativa local",
           "a universidade estadual", "uma pequena ONG", "a secretaria de educação", "o sindicato rural",
           "a junta de freguesia", "um grupo de professores aposentados", "o posto de saúde", "a paróquia"),
}
MONTHS = {
    "en": ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December"),
    "pt": ("janeiro", "fevereiro", "março", "abril", "maio", "junho", "julho", "agosto", "setembro", "outubro",
           "novembro", "dezembro"),
}
DAYS = {
    "en": ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"),
    "pt": ("segunda-feira", "terça-feira", "quarta-feira", "quinta-feira", "sexta-feira", "sábado", "domingo"),
}
ADJ = {
    "en": ("modest", "careful", "unusual", "patient", "practical", "ambitious", "quiet", "steady", "generous",
           "thoughtful", "remarkable", "humble", "lively", "sensible", "demanding", "promising"),
    "pt": ("modesto", "cuidadoso", "curioso", "paciente", "prático", "ambicioso", "discreto", "constante",
           "generoso", "notável", "simples", "animado", "sensato", "exigente", "promissor"),
}

# Per topic: a title noun phrase, plural things, a singular item, an activity, a place where it happens.
TOPICS = {
    "en": (
        ("community gardens", "tomatoes", "raised bed", "planting vegetables", "the old rail yard"),
        ("river restoration", "willows", "stone weir", "clearing the banks", "the lower meadow"),
        ("bicycle commuting", "bike lanes", "cargo bike", "riding to work", "the main avenue"),
        ("public libraries", "picture books", "reading room", "lending tools", "the branch on Mill Street"),
        ("beekeeping", "hives", "honey frame", "inspecting colonies", "the orchard behind the school"),
        ("solar power", "rooftop panels", "inverter", "installing panels", "the sports hall"),
        ("local bakeries", "sourdough loaves", "wood oven", "baking before dawn", "the market square"),
        ("coastal fishing", "sardines", "wooden boat", "mending nets", "the harbour wall"),
        ("hiking trails", "footpaths", "trail map", "marking the route", "the northern ridge"),
        ("rainwater harvesting", "water tanks", "gutter filter", "collecting rainwater", "the primary school"),
        ("repair cafés", "broken lamps", "soldering iron", "fixing appliances", "the parish hall"),
        ("night skies", "telescopes", "star chart", "watching meteors", "the hill above the reservoir"),
        ("school music programmes", "violins", "practice room", "teaching scales", "the old cinema"),
        ("urban trees", "street trees", "watering bag", "pruning branches", "the ring road"),
    ),
    "pt": (
        ("hortas comunitárias", "alfaces", "o canteiro", "plantar legumes", "o terreno da antiga estação"),
        ("recuperação de rios", "salgueiros", "o açude de pedra", "limpar as margens", "a várzea de baixo"),
        ("bicicleta no trabalho", "ciclovias", "a bicicleta de carga", "pedalar até o trabalho", "a avenida principal"),
        ("bibliotecas públicas", "livros infantis", "a sala de leitura", "emprestar ferramentas", "o centro cultural"),
        ("apicultura", "colmeias", "o quadro de mel", "inspecionar as abelhas", "o pomar atrás da escola"),
        ("energia solar", "painéis solares", "o inversor", "instalar painéis", "o ginásio municipal"),
        ("padarias de bairro", "pães de fermentação natural", "o forno a lenha", "amassar antes do amanhecer",
         "a praça do mercado"),
        ("pesca artesanal", "sardinhas", "o barco de madeira", "remendar redes", "o cais do porto"),
        ("trilhas na serra", "caminhos", "o mapa da trilha", "sinalizar o percurso", "a crista norte"),
        ("captação de água da chuva", "cisternas", "o filtro de calha", "recolher água da chuva", "a escola primária"),
        ("oficinas de conserto", "rádios antigos", "o ferro de solda", "consertar aparelhos", "o salão paroquial"),
        ("música nas escolas", "violinos", "a sala de ensaio", "ensinar escalas", "o antigo cinema"),
    ),
}

# Title patterns: {topic} is the topic phrase, {place} a town.
TITLES = {
    "en": ("How {place} learned to love {topic}", "What a year of {topic} taught {place}",
           "{topic_cap} in {place}: a slow and steady story", "The people behind {topic} in {place}",
           "Notes from {place} on {topic}", "Why {place} keeps investing in {topic}"),
    "pt": ("Como {place} aprendeu a gostar de {topic}", "O que um ano de {topic} ensinou a {place}",
           "{topic_cap} em {place}: uma história de paciência", "As pessoas por trás de {topic} em {place}",
           "Notas de {place} sobre {topic}", "Por que {place} continua a apostar em {topic}"),
}

# Sentence templates. Slots: {name} {first} {place} {org} {month} {day} {adj} {n} {big} {year} {pct}
# and the topic slots {things} {item} {activity} {spot} {topic}.
SENTENCES = {
    "en": (
        "When {name} first suggested {activity} near {spot}, few neighbours expected much to come of it.",
        "By the end of {month}, {n} volunteers were turning up every {day} morning.",
        "{first} says the hardest part was not the work itself but keeping everyone informed.",
        "The project began with a {adj} grant of {big} dollars from {org}.",
        "Most of the {things} came from donations, and several were repaired by hand.",
        "Nobody on the team had formal training, so they learned by asking older residents.",
        "There were setbacks, of course, and a wet spring in {year} nearly ended the effort.",
        "{first} keeps a notebook with every measurement taken since the first season.",
        "According to those notes, the group has grown by about {pct} percent each year.",
        "Visitors from {place} now come to see how the {item} was built.",
        "A retired engineer offered advice on the {item}, which had been leaking for weeks.",
        "Children from the nearby school help on Fridays and write short reports about what they saw.",
        "The council eventually agreed to cover insurance, which removed a serious worry.",
        "Some residents complained about noise at first, but most of them later joined in.",
        "\"We made every mistake you can imagine,\" {first} admits with a laugh.",
        "Even so, the results speak for themselves when you walk past {spot} today.",
        "In {month} the group held an open day, and more than {big} people attended.",
        "Local shops started to sponsor small parts of the work, from tools to lunches.",
        "{name}, who moved to {place} in {year}, now coordinates the weekly schedule.",
        "The next step is to share what they learned with towns that want to try {activity}.",
        "Their guide is written in plain language and is free for anyone to copy.",
        "Funding remains uncertain, and the team is careful not to promise too much.",
        "Still, {first} believes the habit of working together matters more than any single result.",
        "A researcher from {org} visited twice to record how the {things} changed over time.",
        "Her findings suggest that small, patient efforts can outlast large campaigns.",
        "Weather is the biggest unknown, so plans are always made with a second option in mind.",
        "The group meets in the back room of a cafe, where the owner keeps a shelf for their papers.",
        "Decisions are taken by a show of hands, and minutes are posted on the door.",
        "Several members admit that they joined mainly for the company and stayed for the work.",
        "For {first}, the most rewarding moment came when a stranger asked how to help.",
        "Older members remember a time when {spot} was fenced off and ignored.",
        "Now it is one of the busiest corners of {place} on a sunny afternoon.",
        "Costs have been kept low by reusing materials wherever possible.",
        "The volunteers publish a short report every {month}, listing what went well and what did not.",
        "Last year they counted {big} {things}, a number that surprised even the optimists.",
        "Training sessions are held twice a month, and newcomers are paired with experienced members.",
        "Some of the original founders have stepped back, but they still visit on {day}s.",
        "It is easy to forget how uncertain the first months were.",
        "There was no budget, no plan and no guarantee that anyone would care.",
        "What changed, {first} says, was the decision to start small and keep going.",
        "Neighbouring towns have asked for copies of the rules the group drew up in {year}.",
        "The local paper has followed the story since the beginning.",
        "On a typical weekend, {n} or more families stop by to ask questions.",
        "{name} hopes that a second site will open before {year} is over.",
        "The biggest lesson, the members agree, is that maintenance never ends.",
        "A {adj} donation from {org} paid for a new {item} last autumn.",
        "Safety rules were written after a minor accident during the second season.",
        "Nobody was hurt, but the episode convinced the group to take training seriously.",
    ),
    "pt": (
        "Quando {name} sugeriu {activity} perto de {spot}, poucos vizinhos acreditaram na ideia.",
        "No fim de {month}, {n} voluntários já apareciam todas as semanas para ajudar.",
        "{first} conta que o mais difícil não foi o trabalho, mas manter todos informados.",
        "O projeto começou com um apoio {adj} de {big} reais concedido por {org}.",
        "Boa parte do material veio de doações, incluindo {things}, e muito foi consertado à mão.",
        "Ninguém da equipe tinha formação técnica, por isso aprenderam com os moradores mais velhos.",
        "Houve contratempos, claro, e uma primavera chuvosa em {year} quase acabou com tudo.",
        "{first} guarda um caderno com todas as medições feitas desde a primeira temporada.",
        "Segundo essas anotações, o grupo cresceu cerca de {pct} por cento por ano.",
        "Hoje chegam visitantes de {place} para conhecer {item} de perto.",
        "Um engenheiro aposentado deu conselhos sobre {item}, que dava problemas havia semanas.",
        "As crianças da escola vizinha ajudam às sextas e escrevem relatos curtos sobre o que viram.",
        "A prefeitura acabou por pagar o seguro, o que afastou uma preocupação séria.",
        "Alguns moradores reclamaram do barulho no início, mas a maioria acabou por participar.",
        "\"Cometemos todos os erros que se pode imaginar\", admite {first} entre risos.",
        "Mesmo assim, os resultados falam por si quando se passa hoje por {spot}.",
        "Em {month} o grupo organizou um dia aberto, e mais de {big} pessoas compareceram.",
        "O comércio local passou a patrocinar pequenas partes do trabalho, das ferramentas aos almoços.",
        "{name}, que se mudou para {place} em {year}, coordena agora a escala semanal.",
        "O próximo passo é partilhar o que aprenderam com outras cidades que queiram {activity}.",
        "O guia que escreveram usa linguagem simples e pode ser copiado por qualquer pessoa.",
        "O financiamento continua incerto, e a equipe tem o cuidado de não prometer demais.",
        "Ainda assim, {first} acredita que o hábito de trabalhar em conjunto vale mais do que qualquer resultado.",
        "Uma pesquisadora de {org} visitou o local duas vezes para estudar o efeito de {activity} no bairro.",
        "As conclusões dela sugerem que esforços pequenos e pacientes duram mais do que grandes campanhas.",
        "O tempo é a maior incógnita, por isso os planos incluem sempre uma segunda opção.",
        "O grupo reúne-se nos fundos de um café, onde o dono reserva uma prateleira para os papéis.",
        "As decisões são tomadas de braço no ar, e as atas ficam afixadas na porta.",
        "Vários membros confessam que entraram pela companhia e ficaram pelo trabalho.",
        "Para {first}, o momento mais gratificante foi quando um desconhecido perguntou como podia ajudar.",
        "Os mais antigos lembram-se de quando {spot} estava cercado e esquecido.",
        "Agora é um dos cantos mais movimentados de {place} numa tarde de sol.",
        "Os custos foram mantidos baixos com a reutilização de materiais sempre que possível.",
        "Os voluntários publicam um relatório curto em {month}, com o que correu bem e o que falhou.",
        "No ano passado contaram {big} {things}, um número que surpreendeu até os mais otimistas.",
        "Há sessões de formação duas vezes por mês, e cada novato trabalha ao lado de alguém experiente.",
        "Alguns fundadores afastaram-se, mas continuam a aparecer aos fins de semana.",
        "É fácil esquecer como os primeiros meses foram incertos.",
        "Não havia orçamento, nem plano, nem garantia de que alguém se interessasse.",
        "O que mudou, diz {first}, foi a decisão de começar pequeno e não desistir.",
        "Cidades vizinhas pediram cópias das regras que o grupo escreveu em {year}.",
        "O jornal local acompanha a história desde o início.",
        "Num fim de semana normal, {n} ou mais famílias passam por lá para tirar dúvidas.",
        "{name} espera que um segundo espaço abra antes do fim de {year}.",
        "A grande lição, concordam os membros, é que a manutenção nunca termina.",
        "Um donativo {adj} de {org} ajudou a renovar {item} no outono passado.",
    ),
}

# Site chrome: navigation entries, footers and cookie banners that extraction should strip.
NAV = {
    "en": ("Home", "News", "Local", "Opinion", "Culture", "Sport", "Weather", "Events", "About us", "Contact",
           "Subscribe", "Archive"),
    "pt": ("Início", "Notícias", "Região", "Opinião", "Cultura", "Desporto", "Tempo", "Agenda", "Quem somos",
           "Contacto", "Assine", "Arquivo"),
}
FOOTER = {
    "en": ("© {year} {site}. All rights reserved.", "Privacy policy", "Terms of use", "Cookie settings",
           "Advertise with us", "Follow us on social media"),
    "pt": ("© {year} {site}. Todos os direitos reservados.", "Política de privacidade", "Termos de uso",
           "Definições de cookies", "Anuncie connosco", "Siga-nos nas redes sociais"),
}
COOKIE = {
    "en": "We use cookies to improve your experience. By continuing to browse you accept our cookie policy.",
    "pt": "Usamos cookies para melhorar a sua experiência. Ao continuar a navegar aceita a nossa política de cookies.",
}
RELATED = {"en": "Related stories", "pt": "Leia também"}

SPAM_KEYWORDS = (
    ("cheap loans", "fast payday loans", "loans no credit check", "instant cash loan", "best loan rates"),
    ("online casino", "free spins", "casino bonus", "best slots", "win real money"),
    ("weight loss pills", "lose weight fast", "diet pills", "burn fat now", "miracle slimming"),
    ("replica watches", "cheap designer bags", "luxury replica", "discount watches", "best replica shop"),
    ("crypto signals", "bitcoin profit", "double your bitcoin", "crypto trading bot", "guaranteed returns"),
    ("buy followers", "cheap instagram likes", "grow followers fast", "real followers", "viral likes"),
)
# Keyword-stuffed marketing prose: whole sentences, stop words and full stops, so it passes the Gopher, C4
# and FineWeb rules and only a quality classifier can tell it from an article. {kw} slots take the
# page's keyword group; no template repeats within a page, so no repetition rule fires either.
SEO_SENTENCES = (
    "If you are looking for {kw} you have come to the right place because we compare every offer for you.",
    "Our team has reviewed the top {n} sites for {kw} so that you can choose the one that suits you best.",
    "Many people ask us where to find {kw} and the answer is always the same: right here on our page.",
    "You will not find better {kw} anywhere else on the internet, and that is a promise we make every day.",
    "Do not miss the chance to get {kw} today, since prices like these never stay around for very long.",
    "We know that {kw} can be confusing, which is why we wrote this simple guide to help you decide.",
    "Thousands of happy customers have already discovered {kw} with us and they keep coming back for more.",
    "The best time to start with {kw} is now, and our exclusive offer makes it easier than ever before.",
    "Compare the top deals for {kw} in {year} and save up to {pct} percent with the links on this page.",
    "Experts agree that {kw} is one of the smartest choices you can make, so read on to learn more.",
    "Click the button below to claim your {kw} bonus before the offer ends at midnight tonight.",
    "There are many reasons to choose {kw} and we have listed the most important ones for you below.",
    "Every visitor to our site can get {kw} with no hidden fees and a fast and friendly sign up process.",
    "Stop wasting time on other sites and get the {kw} you deserve with our trusted partners today.",
    "Whether you are new to {kw} or an old hand, our reviews will help you find the perfect match.",
    "Sign up in less than {n} minutes and enjoy {kw} from the comfort of your own home right away.",
    "This page is updated every week with the newest {kw} so be sure to bookmark it and check back.",
    "We only recommend {kw} that we have tested ourselves, because your trust is what matters most to us.",
    "Read what our members say about {kw} and find out why so many of them never look anywhere else.",
    "Act now and get {kw} at the lowest price of the year, with free delivery on every single order.",
)
# The same marketing prose in Portuguese, so that the demo classifier's negatives have the language mix of its
# positives (a classifier given English-only negatives learns "Portuguese = good").
SPAM_KEYWORDS_PT = (
    ("empréstimo rápido", "crédito sem consulta", "dinheiro na hora", "empréstimo online", "melhores taxas"),
    ("cassino online", "rodadas grátis", "bônus de cassino", "melhores slots", "ganhe dinheiro real"),
    ("emagrecer rápido", "pílulas para emagrecer", "queimar gordura", "dieta milagrosa", "perder peso já"),
    ("seguidores baratos", "curtidas no instagram", "ganhar seguidores", "seguidores reais", "curtidas virais"),
)
SEO_SENTENCES_PT = (
    "Se você procura {kw} chegou ao lugar certo porque nós comparamos todas as ofertas para você.",
    "A nossa equipa analisou os {n} melhores sites de {kw} para que você escolha o que mais combina consigo.",
    "Muitas pessoas perguntam onde encontrar {kw} e a resposta é sempre a mesma: aqui mesmo na nossa página.",
    "Você não vai encontrar {kw} melhor em nenhum outro lugar da internet, e essa é a nossa promessa diária.",
    "Não perca a chance de conseguir {kw} hoje, porque preços como estes nunca duram muito tempo.",
    "Sabemos que {kw} pode ser confuso, e por isso escrevemos este guia simples para ajudar você a decidir.",
    "Milhares de clientes felizes já descobriram {kw} connosco e continuam a voltar para comprar mais.",
    "A melhor hora para começar com {kw} é agora, e a nossa oferta exclusiva torna tudo mais fácil.",
    "Compare as melhores ofertas de {kw} em {year} e economize até {pct} por cento com os links desta página.",
    "Os especialistas concordam que {kw} é uma das escolhas mais inteligentes, por isso continue a ler.",
    "Clique no botão abaixo para garantir o seu bônus de {kw} antes que a oferta termine hoje à meia-noite.",
    "Existem muitas razões para escolher {kw} e listamos as mais importantes para você logo abaixo.",
    "Todos os visitantes do nosso site podem ter {kw} sem taxas escondidas e com um cadastro rápido.",
    "Pare de perder tempo em outros sites e tenha o {kw} que você merece com os nossos parceiros de confiança.",
    "Quer você seja novo em {kw} ou já tenha experiência, as nossas análises vão ajudar a achar a opção ideal.",
    "Cadastre-se em menos de {n} minutos e aproveite {kw} no conforto da sua casa agora mesmo.",
    "Esta página é atualizada toda semana com as novidades de {kw}, então guarde o link e volte sempre.",
    "Só recomendamos {kw} que nós mesmos testamos, porque a sua confiança é o que mais importa para nós.",
)
ADULT_KEYWORDS = ("xxx videos", "free porn", "hot sex chat", "xxx live cams", "adult porn site")

PRODUCTS = (
    "Stainless Steel Water Bottle", "Bamboo Cutting Board", "Wireless Mouse", "Cotton Tote Bag", "LED Desk Lamp",
    "Ceramic Coffee Mug", "Garden Hose 15m", "Cast Iron Skillet", "Yoga Mat", "USB-C Charger",
    "Wool Socks (3 pairs)", "Kitchen Scale", "Notebook A5 Dotted", "Phone Stand", "Bluetooth Speaker",
    "Rain Jacket", "Hiking Backpack 30L", "Glass Food Containers", "Electric Kettle", "Reading Glasses",
)

ERROR_PAGES = (
    (404, "404 Not Found", "Page not found", "Sorry, the page you are looking for does not exist or has been moved."),
    (404, "Página não encontrada", "Erro 404", "A página que procura não existe ou foi removida."),
    (500, "500 Internal Server Error", "Internal Server Error", "The server encountered an error. Try again later."),
    (503, "Service Unavailable", "Down for maintenance", "We are performing scheduled maintenance."),
    (200, "Oops!", "Nothing here", "This page is no longer available."),  # a soft 404
)

SHORT_PAGES = (
    "Coming soon.", "Site under construction. Please check back later.", "Em breve.",
    "Thank you for subscribing!", "Login required.", "Obrigado pela sua mensagem.",
)

# Benchmark-style items: arithmetic word problems (values drawn per item) and fixed science questions.
WORD_PROBLEMS = (
    ("A farmer has {a} rows of cabbages with {b} plants in each row, and a storm destroys {c} of the plants. "
     "How many cabbage plants does the farmer have left after the storm?", lambda a, b, c: a * b - c),
    ("{who} reads {a} pages of a novel every weekday and {b} pages on each day of the weekend. "
     "How many pages does {who} read in {c} full weeks?", lambda a, b, c: c * (5 * a + 2 * b)),
    ("A bakery sells {a} loaves of bread every morning and {b} loaves every afternoon, each loaf for {c} dollars. "
     "How many dollars does the bakery earn from bread in a single day?", lambda a, b, c: (a + b) * c),
    ("A train travels at a steady speed of {a} kilometres per hour for {b} hours and then stops for lunch "
     "before travelling another {c} kilometres. How many kilometres does the train cover in total?",
     lambda a, b, c: a * b + c),
    ("{who} buys {a} packs of pencils with {b} pencils in each pack and gives {c} pencils to classmates. "
     "How many pencils does {who} keep for the school year?", lambda a, b, c: a * b - c),
    ("A water tank holds {a} litres and a garden hose fills it at {b} litres per minute after {c} litres "
     "have already been poured in by hand. How many more litres are needed to fill the tank completely?",
     lambda a, b, c: a - c),
)
WHO = ("Marta", "Jonas", "Priya", "Kofi", "Elena", "Tomás", "Aiko", "Bruno", "Layla", "Ivan")
SCIENCE = (
    ("Which process do green plants use to turn sunlight, water and carbon dioxide into sugar and release "
     "oxygen into the air?", "photosynthesis"),
    ("What is the name of the force that pulls objects toward the centre of the Earth and keeps the Moon "
     "in its orbit around our planet?", "gravity"),
    ("Which organ of the human body pumps blood through the arteries and veins so that oxygen reaches every "
     "cell of the body?", "the heart"),
    ("When liquid water is heated until it turns into an invisible gas that rises into the air, what is "
     "this change of state called?", "evaporation"),
    ("Which layer of gases surrounding the Earth protects living things from most of the harmful ultraviolet "
     "radiation that comes from the Sun?", "the ozone layer"),
    ("What do we call an animal that eats only plants, such as a cow, a rabbit or a deer living in a "
     "forest or on a farm?", "a herbivore"),
    ("Which simple machine is made of a rigid bar that turns around a fixed point and helps a person lift a "
     "heavy load with less effort?", "a lever"),
    ("What is the name of the imaginary line that circles the middle of the Earth halfway between the North "
     "Pole and the South Pole?", "the equator"),
)
