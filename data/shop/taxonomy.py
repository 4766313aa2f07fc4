"""The vocabulary of the synthetic shop catalogue: categories, attributes, options, brands, blurbs.

Read by ``build_catalogue.py``; nothing here is random. The product types are in ``product_types.py``.
Lists are ``|``-separated strings to keep the tables compact.
"""

CATEGORIES = ("fashion", "makeup", "electronics", "furniture", "food")

# Per category: the attribute vocabulary. No two phrases of one category match each other under the
# reward's fuzzy rule (the build checks it), so a goal attribute names one thing.
ATTRIBUTES = {
    "fashion": "machine washable|hand wash|quick drying|moisture wicking|slim fit|relaxed fit|classic fit|"
    "long sleeve|short sleeve|button closure|zipper closure|elastic waistband|stretch fabric|fleece lined|"
    "non slip sole|breathable mesh|cushioned insole|water resistant|wrinkle free|high waist|squat proof|"
    "adjustable strap|faux leather|genuine leather|open toe|uv protection|arch support",
    "makeup": "long lasting|cruelty free|paraben free|fragrance free|highly pigmented|waterproof|smudge proof|"
    "dermatologist tested|natural ingredients|travel size|sensitive skin|oil free|easy to apply|matte finish|"
    "hydrating formula|vegan formula|non toxic|chip resistant|soft bristles|easy to clean|buildable coverage|"
    "talc free",
    "electronics": "high definition|fast charging|noise cancelling|water resistant|easy to install|"
    "plug and play|usb c|long battery life|aluminum alloy|high speed|heavy duty|wireless charging|"
    "built in microphone|4k ultra hd|touch control|compact design|low latency|surge protection|"
    "ergonomic design|rgb backlit|hot swappable|shock resistant|gold plated|tempered glass|case friendly|"
    "led display|voice remote|full motion|adjustable height|wall mount ready|cable management",
    "furniture": "easy to assemble|easy to clean|solid wood|engineered wood|space saving|storage space|"
    "mid century|non slip|metal frame|lumbar support|heavy duty|pu leather|tufted upholstery|"
    "high density foam|adjustable height|cable management|no box spring needed|ergonomic design|"
    "lockable drawer|swivel seat|anti tip hardware|cooling gel|breathable mesh|water resistant",
    "food": "gluten free|sugar free|dairy free|caffeine free|non gmo|keto friendly|low carb|high protein|"
    "usda organic|plant based|kosher certified|low sodium|ready to eat|individually wrapped|resealable bag|"
    "no artificial flavors|fair trade|whole grain|high fiber|cold pressed|raw unfiltered|zero calorie|"
    "low sugar|fat free",
}

# Option value pools. "size" values must match exactly in the reward; the others fuzzily, so no two
# values of one non-size pool match each other (the build checks it).
OPTIONS = {
    "size": "small|medium|large|x-large|xx-large",
    "size_xs": "x-small|small|medium|large|x-large",
    "waist": "30w x 30l|32w x 30l|32w x 32l|34w x 32l|36w x 32l|38w x 34l",
    "shoe": "6|7|8|9|10|11|12",
    "belt": "30|32|34|36|38|40",
    "color": "black|white|navy blue|heather grey|olive green|burgundy|royal blue|charcoal|khaki|pink|"
    "light blue|beige|red|mustard yellow",
    "denim": "dark wash|light wash|black|medium indigo|stone grey",
    "leather": "black|brown|tan|dark brown|cognac",
    "shade": "ivory|porcelain|light beige|natural|warm sand|honey|caramel|espresso|golden tan",
    "lip": "ruby red|nude pink|berry|coral|mauve|plum|rose|cherry red|brick",
    "lash": "black|brown black|dark brown",
    "palette": "nude|smoky|warm neutrals|rose gold|sunset|cool tones",
    "nail": "classic red|ballet pink|midnight blue|emerald|lilac|nude beige|jet black|glitter gold",
    "balm": "vanilla|mint|cherry|strawberry|coconut|unflavored",
    "count_makeup": "5 piece|10 piece|14 piece|18 piece",
    "wipes": "25 count|pack of 2|pack of 3|60 count",
    "volume": "0.5 fl oz|1 fl oz|1.35 fl oz|2 fl oz",
    "tech": "black|white|silver|space gray|midnight blue|rose gold|forest green",
    "switch": "red switch|blue switch|brown switch",
    "ports": "4 in 1|7 in 1|10 in 1|12 in 1",
    "storage": "500gb|1tb|2tb|4tb",
    "cable": "3 ft|6 ft|10 ft|15 ft|25 ft",
    "mount": "26-55 inch|42-70 inch|55-85 inch",
    "phone": "iphone 15|iphone 15 pro|iphone 15 pro max|galaxy s24|galaxy s24 ultra|pixel 8",
    "watts": "20w|30w|45w|65w|100w",
    "mah": "5000mah|10000mah|20000mah|26800mah",
    "screen": "32 inch|43 inch|50 inch|55 inch|65 inch",
    "wood": "walnut|espresso|white oak|rustic brown|black|white|natural oak|grey wash",
    "fabric": "light grey|dark grey|beige|navy|emerald green|charcoal|cream|terracotta",
    "seats": "loveseat|3 seater|sectional",
    "tier": "3 tier|4 tier|5 tier|6 tier",
    "bed": "twin|full|queen|king|california king",
    "firmness": "plush|medium|firm",
    "desk": "40 x 24 inch|48 x 24 inch|55 x 28 inch|63 x 30 inch",
    "set": "set of 2|set of 4|set of 6",
    "stool": "24 inch|26 inch|30 inch",
    "chips": "sea salt|barbecue|sour cream and onion|salt and vinegar|jalapeno|cheddar",
    "bar": "chocolate chip|peanut butter|cookie dough|birthday cake|salted caramel|mint chocolate",
    "mix": "original|tropical|sweet and salty|dark chocolate|honey nut",
    "jerky": "original|teriyaki|peppered|sweet and spicy|hickory smoked",
    "popcorn": "butter|kettle corn|white cheddar|sea salt|caramel",
    "roast": "light roast|medium roast|dark roast|french roast|espresso roast",
    "tea": "jasmine|mint|lemon|original|honey ginger|peach",
    "fizz": "lime|grapefruit|black cherry|lemon|mango|raspberry",
    "cocoa": "milk chocolate|dark chocolate|salted caramel|peppermint|marshmallow",
    "shape": "penne|spaghetti|rotini|fusilli|elbows|linguine",
    "nut": "creamy|crunchy|honey roasted|chocolate",
    "granola": "almond|cinnamon|blueberry|maple pecan|coconut",
    "cacao": "sea salt|almond|mint|orange|raspberry|espresso",
    "gummy": "sour|fruit|peach rings|worms|bears",
    "cookie": "chocolate chip|oatmeal raisin|double chocolate|shortbread|snickerdoodle",
    "snack_pack": "1 ounce (pack of 24)|5 ounce (pack of 6)|8 ounce (pack of 4)|2 ounce (pack of 12)",
    "pack": "pack of 6|pack of 12|pack of 15|pack of 24",
    "ounces": "12 ounce|16 ounce|2 pound|32 ounce",
    "tea_count": "20 count|40 count|100 count",
    "cans": "12 fl oz (pack of 8)|12 fl oz (pack of 12)|12 fl oz (pack of 24)",
    "oil": "16.9 fl oz|25.5 fl oz|33.8 fl oz|1 gallon",
    "jar": "8 ounce|12 ounce|16 ounce|24 ounce",
}

# The "size" pools above are all offered under the option name "size"; the rest keep their own name
# unless a type renames them (``color=denim``).
SIZE_POOLS = tuple(
    "size size_xs waist shoe belt count_makeup wipes volume ports storage cable mount phone watts mah"
    " screen seats tier bed desk set stool snack_pack pack ounces tea_count cans oil jar".split()
)

BRANDS = {
    "fashion": "Northwind|Kestrel & Co|Amberline|Velora|Stonebridge|Harbor Thread|Lumen Wear|Cobalt Ridge|"
    "Fernhill|Marlowe|Tidewell|Redfern|Oakley Lane|Brisa",
    "makeup": "Lumiere Beauty|Petalis|Glossique|Rosewynn|Aurelle|Milla Rose|Verdalia|Opaline|Sable & Silk|"
    "Bloomi|Cashmere Cosmetics|Dewdrop Lab",
    "electronics": "Voltix|Sonara|Nexbit|Quantaro|Ampway|Zentrix|Lumatek|Orbix|Hexwave|Pulsewire|"
    "Aerosonic|Keystone Tech",
    "furniture": "Oakhaven|Linden & Co|Hearthline|Nordvik|Birchwood Home|Castillo|Maplecrest|"
    "Driftwood Living|Loftia|Ardenne|Willowmere|Stonefield",
    "food": "Golden Acre|Harvest Lane|Sunny Fields|Wildgrove|Meadowbrook|Pantry Pal|Crisp & Co|Orchard Hill|"
    "Bramble Farm|Saltwater Kitchen|Nutrix|True Grain",
}

# Per category: sentences for descriptions; they name no attribute phrase (the build checks it).
BLURBS = {
    "fashion": "Made for everyday wear and easy layering.|A wardrobe staple that pairs with anything.|"
    "Designed with a comfortable cut for all-day wear.|Great for work, travel and weekends.|"
    "Thoughtful details and durable stitching.",
    "makeup": "Blends smoothly for a polished look.|A favourite of makeup artists and beginners alike.|"
    "Gives a fresh finish from morning to night.|Compact packaging for your vanity or bag.|"
    "Formulated for a comfortable feel on the skin.",
    "electronics": "Works with most phones, tablets and laptops.|Backed by a two-year warranty.|"
    "Simple setup and reliable everyday performance.|Designed for home, office and travel.|"
    "Tested for durability and consistent performance.",
    "furniture": "Adds warmth and style to any room.|Clear instructions and all hardware included.|"
    "A sturdy piece built for daily use.|Fits small apartments and large homes alike.|"
    "A clean silhouette that suits modern and classic decor.",
    "food": "Perfect for lunch boxes, road trips and the office.|Made in small batches for great taste.|"
    "A pantry favourite for the whole family.|Carefully sourced ingredients in every pack.|"
    "Enjoy it on its own or as part of a recipe.",
}
